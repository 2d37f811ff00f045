# --- daemon helpers shared by the stand-ins (build.py inserts this file where the stand-in asks for it) ---
import contextlib
import os
import signal
import sys


def pid_alive(pid_file):
    """The pid recorded in pid_file when that process still exists, else None."""
    try:
        with open(pid_file) as handle:
            pid = int(handle.readline().strip())
    except (OSError, ValueError):
        return None
    return pid if os.path.isdir(f"/proc/{pid}") else None


def write_atomic(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


def remove_quietly(paths):
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)


def become_daemon(files):
    """Fork like a classic daemon: the child writes `files` (path -> text, "{pid}" filled in);
    the parent exits 0 once they exist, so a Type=forking unit is active only when it is ready."""
    read_end, write_end = os.pipe()
    if os.fork():
        os.close(write_end)
        ready = os.read(read_end, 1)
        os._exit(0 if ready == b"1" else 1)
    os.close(read_end)
    os.setsid()
    publish(files)
    os.write(write_end, b"1")
    os.close(write_end)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)


def publish(files):
    for path, text in files.items():
        write_atomic(path, text.replace("{pid}", str(os.getpid())))


def run_until_stopped(cleanup, wait=None):
    """Stay up until SIGTERM/SIGINT, then remove the `cleanup` files and exit 0."""

    def stop(signum, frame):
        remove_quietly(cleanup)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if wait is not None:
        wait()
    while True:
        signal.pause()


# --- end of daemon helpers ---
