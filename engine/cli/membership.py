"""``python -m engine membership``: is a record in the knowledge base? A membership-inference experiment.

    python -m engine membership --kb clinic_records --attack s2mia --members 20 --non-members 20 --json
    python -m engine membership --kb my_records.jsonl --attack direct --defenses intent-block --out runs/
    python -m engine membership --resume runs/20261204-…        # continue an interrupted experiment
    python -m engine run membership-quick                       # the bundled preset

Every field of :class:`~engine.config.MembershipConfig` is an option (config_options). With ``--json`` the last
line holds ``auroc``, ``auroc_ci``, ``tpr_at_1fpr`` and ``tpr_at_5fpr`` (each with its ``_ci``), ``queries``.
"""

from __future__ import annotations

import sys
from typing import Any

from .common import finish_run
from .extraction import GENERATOR_SPEC, generator_specs


def _show(s: dict) -> None:
    from ..metrics.intervals import fmt_interval
    from ..views.membership import tenancy_lines

    auroc = "n/a" if s.get("auroc") is None else f"{s['auroc']:.3f} {fmt_interval(s.get('auroc_ci'), 3)}"
    print(
        f"run {s.get('run_id', '')}: membership attack {s['attack']} vs defenses [{', '.join(s['defenses']) or 'none'}]"
        f" on {s['kb']} ({s['kb_size']} records indexed): {s['n_members']} members, {s['n_non_members']} non-members"
    )
    print(f"  AUROC {auroc}   (0.5 = chance; 95% stratified bootstrap interval)")
    for key, label in (("tpr_at_1fpr", "1%"), ("tpr_at_5fpr", "5%")):
        print(
            f"  TPR at FPR ≤ {label}: {s[key]:.3f} {fmt_interval(s.get(key + '_ci'), 3)} "
            f"(FPR reached {s[key + '_fpr']:.3f}; one non-member is {s['fpr_resolution'] or 0:.3f})"
        )
    mm, mn = s.get("mean_score_members"), s.get("mean_score_non_members")
    if mm is not None and mn is not None:
        print(f"  mean score: members {mm:.3f}, non-members {mn:.3f}")
    if s.get("members_retrieved") is not None:
        print(f"  members whose own record was retrieved: {s['members_retrieved']:.0%}")
    if s.get("canaries_planted"):
        print(
            f"  canaries: {s['canaries_leaked']} of {s['canaries_planted']} leaked "
            f"{fmt_interval(s.get('canaries_ci'), 3)}; {s['canary_members_found']} of {s['canary_members']} "
            "canaried members proven by their own canary (no false positive possible)"
            + ("" if s.get("canary_members") else " — no probed member carries a canary: raise --canaries or --members")
        )
    for line in tenancy_lines(s):
        print(f"  {line}")
    print(
        f"  {s['queries']} questions ({s['queries_per_decision']:.1f} per decision), {s['blocked']} refused by a "
        f"defense, {s['seconds']:.0f} s"
    )
    if s.get("out_dir"):
        print(f"  events: {s['out_dir']}/events.jsonl")


def membership_values(args: Any) -> dict[str, Any]:
    """The MembershipConfig fields of ``membership``'s options (every field is an option: config_options)."""
    from ..config import MembershipConfig
    from .config_options import config_values

    values = config_values(args, MembershipConfig)
    values["data_dir"] = args.data_dir or ""
    return generator_specs(values, ("generator",), args.api_base)


def cmd_membership(args: Any) -> int:
    """``membership``: one experiment from the options (or a preset), or ``--resume`` an interrupted one."""
    from ..config import MembershipConfig
    from ..runs.membership import MembershipRun
    from .common import _progress_printer, load_kind_preset

    prog = _progress_printer(not args.quiet)
    if args.resume is not None:
        run = MembershipRun.resume(args.resume, progress=prog)
        if not args.quiet:
            print(f"resuming run {run.run_id} after record {run.rounds_done}", file=sys.stderr)
        return finish_run(run, args, _show)
    values = membership_values(args)
    if args.preset:
        cfg, _ = load_kind_preset(args.preset, "membership", args.quiet)
        values = {**cfg.to_dict(), **{k: v for k, v in values.items() if k != "data_dir" or v}}
    cfg = MembershipConfig.from_dict(values, where="membership")
    return finish_run(MembershipRun(cfg, out_dir=args.out, progress=prog), args, _show)


def add_parser(sub: Any, common: Any) -> None:
    """Add the ``membership`` subcommand; ``common(parser)`` adds the shared options."""
    from ..config import MembershipConfig
    from .config_options import add_config_options

    pm = sub.add_parser("membership", help="membership inference: can an attacker tell a record is in the KB?")
    pm.add_argument("--preset", help="a membership preset, e.g. membership-quick")
    add_config_options(
        pm,
        MembershipConfig,
        skip=("data_dir",),
        helps={"generator": "the answering generator: " + GENERATOR_SPEC + " (default: local)"},
    )
    pm.add_argument("--api-base", help="base URL of an OpenAI-compatible server (litellm generators)")
    pm.add_argument("--resume", help="continue an interrupted experiment from its folder")
    common(pm)
    pm.set_defaults(func=cmd_membership)
