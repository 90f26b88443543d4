"""UI benchmarks (not tests): the app's own cost per step, and cold start to the first page.

    .venv/bin/python bench/bench_ui.py [--steps 20]

* per step: AppTest clicks Step N times on the poisoning lab; the engine's own time inside each
  click (PoisoningRun.step + finish, i.e. model and search time) is measured and subtracted,
  leaving the UI's cost (script rerun, rendering, figure building). Target ≤ 150 ms.
* cold start: a fresh Python process imports the app and renders the home page (AppTest).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    from streamlit.testing.v1 import AppTest

    from engine.runs.poisoning import PoisoningRun

    engine_time = {"t": 0.0}
    orig_step, orig_finish = PoisoningRun.step, PoisoningRun.finish

    def timed_step(self, count=1):
        t = time.perf_counter()
        try:
            return orig_step(self, count)
        finally:
            engine_time["t"] += time.perf_counter() - t

    def timed_finish(self):
        t = time.perf_counter()
        try:
            return orig_finish(self)
        finally:
            engine_time["t"] += time.perf_counter() - t

    PoisoningRun.step, PoisoningRun.finish = timed_step, timed_finish
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
    at.run()
    at.switch_page("pages/poisoning_lab.py").run()
    next(n for n in at.number_input if n.label.startswith("How many")).set_value(args.steps + 1)
    next(b for b in at.button if b.label == "Prepare attack").click().run()
    at.button(key="btn_step").click().run()  # warm-up (first figures, first detector report)
    totals, ui = [], []
    for _ in range(args.steps):
        engine_time["t"] = 0.0
        t = time.perf_counter()
        at.button(key="btn_step").click().run()
        dt = time.perf_counter() - t
        totals.append(dt)
        ui.append(dt - engine_time["t"])
    assert not at.exception

    code = ("import time; t=time.perf_counter(); from streamlit.testing.v1 import AppTest; "
            "at=AppTest.from_file('app.py', default_timeout=300); at.run(); assert not at.exception; "
            "print(time.perf_counter()-t)")
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600)
    cold_process = time.perf_counter() - t
    res = {"steps": args.steps, "ui_ms_per_step_median": 1000 * statistics.median(ui),
           "ui_ms_per_step_p90": 1000 * sorted(ui)[int(0.9 * (len(ui) - 1))],
           "total_ms_per_step_median": 1000 * statistics.median(totals),
           "cold_start_first_page_s": cold_process,
           "cold_start_script_s": float(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None}
    for k, v in res.items():
        print(f"{k}: {v:.1f}" if isinstance(v, float) else f"{k}: {v}")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
