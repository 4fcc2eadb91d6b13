package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/service"
)

// classify gives an error its status and code.
func classify(err error) (int, string) {
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, ErrStale):
		return http.StatusConflict, api.CodeStale
	case errors.Is(err, service.ErrNotFound):
		return http.StatusNotFound, api.CodeNotFound
	case errors.Is(err, service.ErrExists):
		return http.StatusConflict, api.CodeExists
	case errors.Is(err, service.ErrBusy):
		return http.StatusConflict, api.CodeBusy
	case errors.Is(err, service.ErrSessionLost):
		return http.StatusConflict, api.CodeLost
	case errors.Is(err, service.ErrClosed):
		return http.StatusConflict, api.CodeClosed
	case errors.Is(err, service.ErrExited):
		return http.StatusConflict, api.CodeExited
	case errors.Is(err, service.ErrNoStdin), errors.Is(err, os.ErrClosed):
		return http.StatusConflict, api.CodeNoStdin
	case errors.Is(err, service.ErrInvalid), errors.Is(err, service.ErrInvalidSignal), errors.Is(err, errBadRequest):
		return http.StatusBadRequest, api.CodeBadRequest
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, api.CodeTooLarge
	case errors.Is(err, service.ErrSetup):
		return http.StatusInternalServerError, api.CodeSetup
	}
	return http.StatusInternalServerError, api.CodeInternal
}

var errBadRequest = errors.New("bad request")

func (s *Server) fail(w http.ResponseWriter, err error) {
	status, code := classify(err)
	if status == http.StatusInternalServerError {
		s.o.Logger.Error("request failed", "err", err)
	}
	writeError(w, status, code, err.Error())
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, api.Error{Code: code, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
