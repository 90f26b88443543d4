"""``python -m engine audit``: attack a RAG system you run, write a report, gate a CI build on it.

    python -m engine audit --target http --target-params '{"url": "http://127.0.0.1:8765/query",
        "contexts_path": "sources"}' --kb clinic_records --preset audit-quick --out audit/ --fail-on severity>=high
    python -m engine audit --preset audit-quick                      # the built-in demo configuration
    python -m engine audit --preset audit/audit.yaml --only extraction:rag-thief --out repro/   # one finding
    python -m engine audit cleanup --out audit/                      # remove what a crashed run planted
    python -m engine audit probe --target http --target-params @target.json   # test the connection

Exit codes: 0 the audit finished and the gate (if any) passed; 3 the gate failed (one ``gate failed:`` line
per reason on stdout); 2 bad input, an unreachable or failing target, or a stop (the report written so
far is kept and the same command resumes); 1 an internal error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError


def audit_config(args: Any):
    """The :class:`~engine.config.AuditConfig` of the options: the preset, with every option given on top."""
    from ..config import AuditConfig
    from .common import load_kind_preset

    if args.preset:
        cfg, _ = load_kind_preset(args.preset, "audit", args.quiet)
        values = cfg.to_dict()
    else:
        values = AuditConfig().to_dict()
    from .config_options import config_values

    given = config_values(args, AuditConfig, skip=("data_dir", "fail_on"))
    changed = {k: v for k, v in given.items() if k != "target_params" and values.get(k) != v}
    if args.preset and changed and not args.quiet:  # the description above counts the preset's own budget
        print(
            "  with " + ", ".join(f"{k} {values.get(k)!r} → {v!r}" for k, v in changed.items()) + " from the options",
            file=sys.stderr,
        )
    if "target" in given and "target_params" not in given:
        values["target_params"] = None  # another target: the preset's parameters were for its own
    if given.get("target_params") is not None and not isinstance(given["target_params"], dict):
        raise ConfigError("--target-params must be a JSON object of the target's parameters")
    values.update(given)
    if args.data_dir:
        values["data_dir"] = args.data_dir
    if args.fail_on is not None:
        values["fail_on"] = args.fail_on or None
    if isinstance(values.get("fail_on"), str):
        from ..audit.gate import parse_fail_on

        values["fail_on"] = parse_fail_on(values["fail_on"])
    return AuditConfig.from_dict(values, where="audit")


def _print_report(report: dict, out: Path) -> None:
    from ..audit.report import HEADLINE

    counts = ", ".join(f"{n} {s}" for s, n in report["severity_counts"].items() if n) or "none"
    t = report["target"]
    print(f"audit of {t['kind']} {t['endpoint']}: {report['status']}; findings: {counts}")
    for f in report["findings"]:
        head = ""
        for k in HEADLINE:
            m = (f.get("metrics") or {}).get(k)
            if m and m.get("value") is not None:
                ci = f" [{m['ci'][0]:.3f}, {m['ci'][1]:.3f}]" if m.get("ci") else ""
                head = f"{k} {m['value']:.3f}{ci}"
                break
        sev = f["severity"] if f["status"] == "done" else f["status"]
        print(f"  {sev:9s} {f['id']:24s} {head}  — {f['severity_rationale']}")
    print(f"report: {out / 'report.html'} (and report.json, report.junit.xml)")


def cmd_audit(args: Any) -> int:
    """``audit``: run (or resume) a battery against a target; ``audit cleanup``: remove outstanding plants."""
    if args.action == "cleanup":
        return cmd_cleanup(args)
    if args.action == "probe":
        return cmd_probe(args)
    from ..audit import GATE_FAILED, Audit, load_baseline, regressions
    from ..audit.gate import fail_on_text, parse_fail_on
    from ..audit.report import write_outputs
    from ..audit.runner import default_out
    from .common import _progress_printer

    cfg = audit_config(args)
    baseline = load_baseline(args.baseline) if args.baseline else None
    out = Path(args.out) if args.out else default_out(cfg)
    only = tuple(x.strip() for x in (args.only or "").split(",") if x.strip() and x.strip() != "none")
    audit = Audit(cfg, out, progress=_progress_printer(not args.quiet), only=only)
    finished = audit.preflight()  # a refusal (another audit's folder, damaged state) comes before the banner
    if not args.quiet:
        again = f"resuming: {finished} cell(s) already finished; " if finished else ""
        print(f"auditing {cfg.target} into {out} ({again}the same command resumes it)", file=sys.stderr)
    report = audit.run()
    fail_on = parse_fail_on(cfg.fail_on)
    lines = regressions(report, fail_on, baseline, new_only=args.new_only) if (fail_on or baseline is not None) else []
    report["gate"] = {
        "fail_on": fail_on,
        "baseline": str(args.baseline) if args.baseline else None,
        "new_only": bool(args.new_only),
        "regressions": lines,
        "passed": (not lines) if (fail_on or baseline is not None) else None,
    }
    write_outputs(out, report)
    if not (args.json and args.quiet):
        _print_report(report, out)
    for line in lines:
        print(f"gate failed: {line}")
    if report["gate"]["passed"]:
        print(
            f"gate passed: {fail_on_text(fail_on) or 'no threshold'}"
            + (f"; not worse than the baseline {args.baseline}" if args.baseline else "")
        )
    if args.json:
        print(
            json.dumps(
                {
                    "status": report["status"],
                    "severity_counts": report["severity_counts"],
                    "findings": [
                        {
                            "id": f["id"],
                            "severity": f["severity"],
                            "status": f["status"],
                            "metrics": {k: m.get("value") for k, m in (f.get("metrics") or {}).items()},
                        }
                        for f in report["findings"]
                    ],
                    "gate": report["gate"],
                    "report": str(out / "report.json"),
                }
            )
        )
    return GATE_FAILED if lines else 0


def cmd_probe(args: Any) -> int:
    """``audit probe``: one query to the target; the parsed answer and contexts, or the one line that failed."""
    from ..targets.probe import probe

    cfg = audit_config(args)
    got = probe(cfg.target, dict(cfg.target_params or {}), data_dir=cfg.data_dir or None)
    if args.json:
        print(json.dumps(got))
    elif got["ok"]:
        if got.get("request"):
            print(f"sent: {got['request'][:600]}")
        print(f"{got['endpoint']} answered in {got['seconds']:.1f} s: {got['answer'][:400]!r}")
        if got["contexts_reported"]:
            print(
                f"  {len(got['contexts'])} context(s): "
                + "; ".join(f"{c['id'] or '(no id)'}: {c['text'][:60]!r}" for c in got["contexts"][:5])
            )
        else:
            hint = got.get("contexts_hint")
            print("  no contexts reported" + (f" ({hint}, if it has them)" if hint else ""))
        print(
            f"  write surface (poisoning): {'yes' if got['can_write'] else 'no'}; removal verifiable: "
            f"{'yes' if got['can_verify'] else 'no'}; store readable as the reference: "
            f"{'yes' if got['readable'] else 'no'}"
        )
    if not got["ok"]:
        from ..errors import EngineError

        raise EngineError(got["error"])
    return 0


def cmd_cleanup(args: Any) -> int:
    """``audit cleanup``: remove every outstanding plant of ``--out`` (or of every journal the cache lists)."""
    from ..audit.journal import PlantJournal, cleanup, open_journals
    from .common import _progress_printer

    journals = [PlantJournal(Path(args.out))] if args.out else [PlantJournal(p.parent) for p in open_journals()]
    if not journals:
        print("nothing to clean up: no audit journal with outstanding plants", file=sys.stderr)
        return 0
    failed = []
    for j in journals:
        left = j.outstanding()
        if not left:
            print(f"{j.path.parent}: nothing outstanding")
            continue
        done = cleanup(j, data_dir=args.data_dir, progress=_progress_printer(not args.quiet))
        print(
            f"{j.path.parent}: removed {done['removed']} planted document(s), {done['verified']} verified gone, "
            f"{done['unverifiable']} not verifiable"
        )
        failed += done["failed"]
    for line in failed:
        print(f"error: {line}", file=sys.stderr)
    return 2 if failed else 0


def add_parser(sub: Any, common: Any) -> None:
    """The ``audit`` subcommand."""
    pa = sub.add_parser(
        "audit",
        help="audit your own RAG: a battery of attacks against a target, a report, a CI "
        "gate ('audit cleanup' removes what a crashed run planted)",
    )
    pa.add_argument(
        "action",
        nargs="?",
        choices=("run", "cleanup", "probe"),
        default="run",
        help="run the battery (default), cleanup what a crashed run planted, or probe the target once",
    )
    pa.add_argument(
        "--preset",
        help="an audit preset: audit-quick, audit-standard, or a YAML path (e.g. an audit folder's audit.yaml)",
    )
    from ..config import AuditConfig
    from .config_options import add_config_options

    add_config_options(
        pa,
        AuditConfig,
        skip=("data_dir",),
        aliases={"extraction_attacks": ("--attacks",), "poisoning_attacks": ("--poisoning",)},
        helps={"fail_on": "gate: severity>=high and/or METRIC>VALUE, comma-separated"},
        metavars={"fail_on": "RULES"},
    )
    pa.add_argument("--only", help="run only these cells (comma-separated, e.g. extraction:rag-thief)")
    pa.add_argument(
        "--baseline",
        help="gate: an earlier report.json (or its folder); a rate whose interval lies above the baseline's fails",
    )
    pa.add_argument(
        "--new-only",
        action="store_true",
        help="gate, with --baseline: a --fail-on breach the baseline had already passes (a ratchet: accept known "
        "findings, fail on new ones); without it every breach fails",
    )
    common(pa)
    pa.set_defaults(func=cmd_audit)
