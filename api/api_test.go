package api

import (
	"encoding/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"testing"
)

func TestEnvForms(t *testing.T) {
	tests := []struct {
		name, in string
		want     Env
		err      bool
	}{
		{"list", `["A=1","B=2"]`, Env{"A=1", "B=2"}, false},
		{"object, keys sorted", `{"B":"2","A":"x=y"}`, Env{"A=x=y", "B=2"}, false},
		{"number", `5`, nil, true},
		{"object of numbers", `{"A":1}`, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e Env
			err := json.Unmarshal([]byte(tc.in), &e)
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, e)
		})
	}
}

func TestSignalForms(t *testing.T) {
	var r SignalRequest
	require.NoError(t, json.Unmarshal([]byte(`{"signal":15}`), &r))
	assert.Equal(t, Signal("15"), r.Signal)
	require.NoError(t, json.Unmarshal([]byte(`{"signal":"SIGINT","scope":"process"}`), &r))
	assert.Equal(t, Signal("SIGINT"), r.Signal)
	assert.Error(t, json.Unmarshal([]byte(`{"signal":[1]}`), &r))
}
