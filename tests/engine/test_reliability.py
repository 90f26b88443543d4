"""Reliability, second round: one writer per run, no silent overwrite, bounded input, no NaN, keys never echoed
to disk — each case a row of a table, run through the real command line (exit 2 and one `error:` line, or a
correct result), against real loopback servers where a remote model is involved."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ScriptedServer, run_cli

REPO = Path(__file__).resolve().parents[2]


def one_error(r, pattern: str) -> None:
    """Exit 2 and exactly one ``error:`` line matching ``pattern`` (no traceback, no internal error)."""
    lines = [x for x in r.stderr.splitlines() if x.startswith(("error:", "internal error:", "Traceback"))]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), r.stderr[-1500:]
    assert re.search(pattern, lines[0]), lines[0]


def peak_rss_mb(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``python -m engine ARGS`` under a wrapper that reports the child's own peak RSS (MB)."""
    wrapper = (
        "import resource, subprocess, sys; p = subprocess.run([sys.executable, '-m', 'engine', *sys.argv[1:]], "
        "capture_output=True, text=True); sys.stdout.write(p.stdout); sys.stderr.write(p.stderr); "
        "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(p.returncode)"
    )
    r = subprocess.run([sys.executable, "-c", wrapper, *args], cwd=REPO, capture_output=True, text=True, timeout=600)
    peak = int(re.search(r"PEAK (\d+)", r.stdout).group(1)) / 1024
    return r, peak


# ------------------------------------------------------------------------------------------ bounded presets
BOMB = "kind: extract\nattack_params:\n  a: &a [1,1,1,1,1,1,1,1,1]\n" + "".join(
    f"  {n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")
)
PRESETS = {
    "an alias bomb in a mapping no plugin reads": (BOMB, "expands to more than 100,000 values"),
    "more aliases than a preset needs": (
        "kind: extract\n"
        + "".join(f"k{i}: &x{i} 1\n" for i in range(101))
        + "attack_params: {"
        + ", ".join(f"v{i}: *x{i}" for i in range(101))
        + "}\n",
        "more than 100 YAML aliases",
    ),
    "nesting 100,000 levels deep": (
        "kind: extract\nattack_params: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "nested more than 32 levels deep",
    ),
    "a duplicate key": ("kind: extract\nrounds: 3\nrounds: 5\n", "key 'rounds' is given twice \\(line 3\\)"),
    "kind as a list": ("kind: [extract]\n", "kind must be text \\(got list\\)"),
    "description as a number": ("kind: extract\ndescription: 42\n", "description must be text \\(got int\\)"),
    "a NaN in a float field": ("kind: extract\ncrr_tau: .nan\n", "crr_tau: expected a finite number"),
    "an infinite float": ("kind: extract\nsemantic_threshold: .inf\n", "semantic_threshold: expected a finite number"),
    "a negative seed": ("kind: extract\nseed: -3\n", "seed: -3 is below the minimum 0"),
}


@pytest.mark.parametrize("case", sorted(PRESETS))
def test_a_hostile_preset_is_one_line_in_bounded_memory(case, tmp_path):
    text, message = PRESETS[case]
    path = tmp_path / "p.yaml"
    path.write_text(text)
    r, peak = peak_rss_mb("run", str(path), "--out", str(tmp_path / "out"))
    one_error(r, message)
    assert peak < 1024, f"{case}: peak {peak:.0f} MB"
    assert not list((tmp_path / "out").glob("*/events.jsonl")), "nothing was started"


def test_a_20_mb_preset_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("kind: extract\ndescription: |\n" + ("  " + "x" * 99 + "\n") * 200_000)
    r, peak = peak_rss_mb("run", str(path))
    one_error(r, "20,[0-9,]+ bytes; a preset is a small YAML file")
    assert peak < 1024


def test_json_options_nested_past_reading_are_one_line(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    r = run_cli("poison", "--attack-params", f"@{deep}", "--limit", "1")
    one_error(r, "--attack-params: the JSON is nested too deep")
    r = run_cli("audit", "--target", "http", "--target-params", f"@{deep}", "--out", str(tmp_path / "a"))
    one_error(r, "--target-params: the JSON is nested too deep")


# ------------------------------------------------------------------------------------------ numbers and paths
@pytest.mark.parametrize(
    "args,message",
    [
        (["poison", "--limit", "2", "--beta", "nan"], "beta: expected a finite number"),
        (
            [
                "poison",
                "--limit",
                "2",
                "--defenses",
                "threshold",
                "--defense-params",
                '{"threshold": {"min_similarity": NaN}}',
            ],
            "expected a finite number",
        ),
        (["extract", "--rounds", "1", "--seed", "-1"], "seed: -1 is below the minimum 0"),
        (["extract", "--resume", ""], "--resume: '' is not a run folder"),
        (["extract", "--resume", "no\nsuch\nrun"], "is not a run folder"),
        (["analyze", "--save", "."], "--save '.' is a folder"),
    ],
)
def test_bad_numbers_and_paths_are_one_line(args, message):
    r = run_cli(*args)
    one_error(r, message)
    assert len(r.stderr.strip().splitlines()[-1:]) == 1


# ------------------------------------------------------------------------------------------ no silent overwrite
def test_a_sweep_with_other_settings_is_refused_not_overwritten(tmp_path):
    out = tmp_path / "sweep"
    base = [
        "sweep",
        "--corpora",
        "clinic_handbook",
        "--retrievers",
        "bm25",
        "--query-sets",
        "clinic_handbook",
        "--targets",
        "pii",
        "--out",
        str(out),
        "-q",
    ]
    r = run_cli(*base, "--limit", "2")
    assert r.returncode == 0, r.stderr[-1500:]
    before = (out / "sweep_cells.csv").read_text()
    r = run_cli(*base, "--limit", "3")
    one_error(r, "holds a sweep with other settings \\(limit 2 → 3\\).*--overwrite")
    assert (out / "sweep_cells.csv").read_text() == before, "the finished cells are untouched"
    r = run_cli(*base, "--limit", "3", "--overwrite")
    assert r.returncode == 0 and (out / "sweep_cells.csv").read_text() != before


def test_a_comparison_with_other_settings_is_refused_not_overwritten(tmp_path):
    from engine.config import ComparisonConfig

    out = tmp_path / "cmp"
    out.mkdir()
    cfg = ComparisonConfig.from_dict(
        {
            "base": {"kb": "clinic_records", "rounds": 10, "generator": "local", "attacker_llm": ""},
            "configurations": ["none"],
            "attacks": ["zeng"],
        }
    )
    record = {
        "config": cfg.to_dict(),
        "rows": [],
        "complete": True,
        "runs": [{"kb": "clinic_records", "attack": "zeng", "configuration": "none", "seed": 0, "crr": 0.1}],
    }
    (out / "comparison.json").write_text(json.dumps(record))
    r = run_cli(
        "compare",
        "--kb",
        "clinic_records",
        "--attacks",
        "zeng",
        "--configurations",
        "none",
        "--rounds",
        "20",
        "--generator",
        "local",
        "--out",
        str(out),
    )
    one_error(r, "holds a comparison with other settings \\(.*base.rounds 10 → 20.*--overwrite")
    assert json.loads((out / "comparison.json").read_text()) == record


# ------------------------------------------------------------------------------------------ one writer per run
def test_two_resumes_of_one_run_one_proceeds_one_stops(tmp_path):
    calls = []

    def answer(method, path, body, headers):
        calls.append(time.monotonic())
        if len(calls) == 2:  # the run's second round fails: an unfinished run on disk
            return 500, {}, b'{"error": "down"}', 0
        return 200, {}, json.dumps({"answer": f"answer {len(calls)}"}).encode(), 1.5 if len(calls) > 2 else 0

    s = ScriptedServer(answer)
    try:
        from engine.config import ExtractionConfig
        from engine.runs.extraction import ExtractionRun, RunInterrupted

        cfg = ExtractionConfig.from_dict(
            {
                "kb": "",
                "attack": "zeng",
                "rounds": 4,
                "attacker_llm": "",
                "target": "http",
                "target_params": {"url": s.base + "/q", "retries": 0},
            }
        )
        run = ExtractionRun(cfg, out_dir=tmp_path / "runs")
        with pytest.raises(RunInterrupted):
            run.run()
        run.close()
        folder = run.out_dir
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "engine", "extract", "--resume", str(folder), "-q"],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        ]
        time.sleep(0.5)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "engine", "extract", "--resume", str(folder), "-q"],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
        results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
        codes = sorted(c for c, _ in results)
        assert codes == [0, 2], results
        busy = next(err for c, err in results if c == 2)
        assert "is already being written" in busy and len([x for x in busy.splitlines() if x.startswith("error:")]) == 1
        from engine.events import read_events

        events, dropped = read_events(folder / "events.jsonl")
        assert dropped == 0 and [e.kind for e in events].count("round_ended") == 4, "the run is whole and finished"
    finally:
        s.close()


# ------------------------------------------------------------------------------------------ remote models
def chat_reply(content, **extra) -> bytes:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "model": "m",
            "created": 1,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]
            if content is not ...
            else [],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            **extra,
        }
    ).encode()


def extract_against(server, tmp_path, *extra, env=None):
    return run_cli(
        "extract",
        "--kb",
        "clinic_records",
        "--attack",
        "zeng",
        "--rounds",
        "2",
        "--generator",
        "openai/m",
        "--api-base",
        server.base + "/v1",
        "--out",
        str(tmp_path / "runs"),
        "--json",
        *extra,
        env_extra={"OPENAI_API_KEY": "sk-local-test", **(env or {})},
    )


@pytest.mark.parametrize(
    "reply,message", [(..., "no answer \\(an empty choices list\\)"), (None, "no text \\(content null")]
)
def test_an_empty_or_null_answer_is_a_failed_round_with_a_resume_hint(reply, message, tmp_path):
    s = ScriptedServer(lambda *a: (200, {}, chat_reply(reply), 0))
    try:
        r = extract_against(s, tmp_path)
        one_error(r, message + ".*resume with: python -m engine extract --resume")
        events = (next((tmp_path / "runs").glob("*/events.jsonl"))).read_text()
        assert '"status": "failed"' in events and '"kind": "round_ended"' not in events
    finally:
        s.close()


def test_a_429_retry_after_is_waited_for(tmp_path):
    seen = []

    def answer(*a):
        seen.append(time.monotonic())
        if len(seen) == 1:
            return 429, {"Retry-After": "3"}, b'{"error": {"message": "slow down", "type": "rate_limit_error"}}', 0
        return 200, {}, chat_reply("The clinic note says nothing."), 0

    s = ScriptedServer(answer)
    try:
        r = extract_against(s, tmp_path, "--rounds", "1")
        assert r.returncode == 0, r.stderr[-1500:]
        assert seen[1] - seen[0] >= 2.9, "the retry waited the 3 s the server asked for (not 1 s)"
    finally:
        s.close()


def test_a_key_echoed_in_a_normal_answer_never_reaches_disk_or_the_terminal(tmp_path):
    key = "sk-echoed-" + "4" * 30

    def answer(method, path, body, headers):
        return 200, {}, chat_reply(f"Sure. Your header was {headers.get('Authorization', '')}."), 0

    s = ScriptedServer(answer)
    try:
        r = extract_against(s, tmp_path, env={"OPENAI_API_KEY": key})
        assert r.returncode == 0, r.stderr[-1500:]
        assert key not in r.stdout + r.stderr
        for f in (tmp_path / "runs").rglob("*"):
            if f.is_file():
                assert key not in f.read_text(errors="replace"), f
        assert "[redacted]" in next((tmp_path / "runs").glob("*/events.jsonl")).read_text()
    finally:
        s.close()


@pytest.mark.slow
def test_a_huge_answer_despite_max_tokens_is_capped_in_bounded_memory(tmp_path, monkeypatch):
    """A server that answers 50 MB for max_tokens 16: the answer kept is capped (the rest counted as dropped), and
    the process's peak memory grows by well under 1 GB over the same run with a short answer."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    peaks = {}
    for name, text in (("short", "A short answer."), ("huge", "word " * 10_000_000)):
        s = ScriptedServer(lambda *a, body=chat_reply(text): (200, {}, body, 0))
        try:
            r, peaks[name] = peak_rss_mb(
                "extract",
                "--kb",
                "clinic_records",
                "--attack",
                "zeng",
                "--rounds",
                "1",
                "--generator",
                "openai/m",
                "--api-base",
                s.base + "/v1",
                "--answer-budget",
                "fixed",
                "--max-tokens",
                "16",
                "--out",
                str(tmp_path / name),
                "-q",
            )
            assert r.returncode == 0, r.stderr[-1500:]
        finally:
            s.close()
    events = [json.loads(x) for x in next((tmp_path / "huge").glob("*/events.jsonl")).read_text().splitlines()]
    gen = next(e for e in events if e["kind"] == "generated")
    assert len(gen["text"]) <= 4096 and gen["info"]["dropped_chars"] > 49_000_000
    assert peaks["huge"] - peaks["short"] < 1024, peaks


def test_a_pdf_whose_pages_hold_no_text_is_one_line(tmp_path):
    from pypdf import PdfWriter

    w = PdfWriter()
    w.add_blank_page(200, 200)  # a scanned page: no text layer
    w.add_blank_page(200, 200)
    w.write(str(tmp_path / "scan.pdf"))
    r = run_cli("poison", "--corpus", str(tmp_path / "scan.pdf"), "--limit", "1")
    one_error(r, "scan.pdf' is empty \\(no non-empty documents\\)")


@pytest.mark.slow
def test_a_huge_one_line_document_is_chunked_in_bounded_memory(tmp_path):
    """A 2 MB document with no sentence in it (one line of words): cut into blocks before any tokenizer sees it,
    packed word by word in linear work, every chunk within what MiniLM reads; the peak memory of loading it
    stays well under 1 GB above the process's own."""
    import random

    random.seed(0)
    words = ["patient", "reports", "pain", "since", "monday", "blood", "pressure", "normal", "follow", "up", "dose"]
    path = tmp_path / "one-line.txt"
    path.write_text(" ".join(random.choice(words) for _ in range(330_000)))
    code = (
        "import resource, sys\nsys.path.insert(0, sys.argv[2])\n"
        "from engine.corpora import load_corpus, retriever_window\nfrom engine.embedders import make_retriever\n"
        "w = retriever_window(make_retriever('minilm')); w.count(['warm up'])\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "c = load_corpus(sys.argv[1], window=w)\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(len(c), max(w.count(c.texts)), (after - before) // 1024)"
    )
    r = subprocess.run([sys.executable, "-c", code, str(path), str(REPO)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-1500:]
    chunks, longest, grown_mb = (int(x) for x in r.stdout.split())
    assert chunks > 1200 and longest <= 254 and grown_mb < 1024, r.stdout


def test_a_full_disk_leaves_the_previous_results_whole(tmp_path):
    """The same sweep run again with writes capped at 64 KB (RLIMIT_FSIZE: every write past it fails, as on a full
    disk): one line, exit 1, and every result file of the first run still whole (written to a temporary file and
    renamed, never truncated in place)."""
    import resource
    import signal

    out = tmp_path / "sweep"
    args = [
        "sweep",
        "--corpora",
        "clinic_handbook",
        "--retrievers",
        "bm25",
        "--query-sets",
        "clinic_handbook",
        "--targets",
        "pii",
        "--limit",
        "2",
        "--out",
        str(out),
        "-q",
    ]
    assert run_cli(*args).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and not p.name.startswith(".")}
    assert len(before["heatmap.html"]) > 64 * 1024

    def cap_writes():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    r = subprocess.run(
        [sys.executable, "-m", "engine", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=cap_writes,
    )
    lines = [x for x in r.stderr.splitlines() if x.startswith(("error:", "internal error:", "Traceback"))]
    assert r.returncode == 1 and len(lines) == 1 and "the disk is full" in lines[0], r.stderr[-1500:]
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and not p.name.startswith(".")}
    assert after == before, "every result file is whole and unchanged; no temporary file is left"
