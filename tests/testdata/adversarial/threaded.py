# threaded.py GIT MODE: a Python program with busy threads running execs.
#   MODE subprocess: subprocess.run of "GIT status" (allowed) and "GIT push"
#                    (denied) from the main thread and from a worker thread
#   MODE execv-status / execv-push: a worker thread replaces the process with
#                    os.execv (an exec from a thread that is not the leader)
import os
import subprocess
import sys
import threading

git, mode = sys.argv[1], sys.argv[2]
stop = threading.Event()


def spin():
    n = 0
    while not stop.is_set():
        n += 1


for _ in range(4):
    threading.Thread(target=spin, daemon=True).start()


def allowed():
    r = subprocess.run([git, "status"], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout == "git ran: status\n"


def denied():
    try:
        r = subprocess.run([git, "push"], capture_output=True, text=True)
        print("denied ran:", r.stdout.strip(), flush=True)
        return False
    except PermissionError:
        return True


if mode == "subprocess":
    print(f"allowed ok={sum(allowed() for _ in range(10))}/10", flush=True)
    print(f"denied refused={sum(denied() for _ in range(10))}/10", flush=True)
    res = {}

    def worker():
        res["allowed"], res["denied"] = allowed(), denied()

    w = threading.Thread(target=worker)
    w.start()
    w.join()
    print(f"from a thread: allowed={res['allowed']} refused={res['denied']}", flush=True)
    sh = subprocess.run(f"{git} push", shell=True, capture_output=True, text=True)
    print(f"shell rc={sh.returncode}", flush=True)
    stop.set()
elif mode.startswith("execv-"):
    def execer():
        try:
            os.execv(git, [git, mode[len("execv-"):]])
        except PermissionError:
            print("thread execv: PermissionError", flush=True)
            os._exit(126)

    threading.Thread(target=execer).start()
    threading.Event().wait(10)
    print("execv did not happen", flush=True)
    os._exit(3)
