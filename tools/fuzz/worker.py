"""The process that runs programs for the batch driver: `python -m tools.fuzz.worker`.

Reads one JSON request per line on stdin ({"id", "source", "backends", "dump_after", "mode"}) and
answers each on the original stdout with {"id", "event": "done", "outcome", "seconds"}.
Anything the programs or libraries write to stdout goes to stderr, so it cannot garble an
answer. A program still running after `dump_after` seconds has every thread's stack written
to stderr, which the driver reports as the last words of a hang.
"""

import faulthandler
import json
import logging
import os
import sys
import time
import warnings


def _protocol_stream():
    """The original stdout for answers; file descriptor 1 then points at stderr."""
    stream = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return stream


def main():
    answers = _protocol_stream()
    warnings.simplefilter("ignore")
    logging.getLogger("bytegraph").setLevel(logging.CRITICAL)
    logging.getLogger("torch").setLevel(logging.CRITICAL)  # fake tensors log the errors programs raise on purpose
    from tools.fuzz.runner import Outcome, run_program
    from tools.fuzz.state_runner import run_state_program

    runners = {"default": run_program, "mutate-state": run_state_program}

    answers.write(json.dumps({"event": "ready"}) + "\n")  # imports done: job time starts now
    for line in sys.stdin:
        request = json.loads(line)
        start = time.perf_counter()
        if request.get("dump_after"):
            faulthandler.dump_traceback_later(request["dump_after"], file=sys.stderr)
        try:
            run = runners[request.get("mode") or "default"]
            outcome = run(request["source"], tuple(request["backends"]), filename=f"<{request['id']}>")
        except Exception as error:  # a program the runner itself cannot run (a shrink candidate)
            outcome = Outcome("error", f"{type(error).__name__}: {error}")
        finally:
            faulthandler.cancel_dump_traceback_later()
        answers.write(json.dumps({"id": request["id"], "event": "done", "outcome": outcome.to_dict(),
                                  "seconds": time.perf_counter() - start}) + "\n")


if __name__ == "__main__":
    main()
