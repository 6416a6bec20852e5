"""The benchmark's human-readable table (without --json)."""

from __future__ import annotations


def print_budgets(ddtree: dict) -> None:
    """Commit and round time per DDTree budget and text type, and the fastest budget."""
    by_budget = ddtree.get("by_budget")
    if not by_budget:
        return
    print("DDTree budgets (each its own arm, paired with AR like the methods):")
    print(
        f"  {'budget':>6} {'type':<6} {'commit':>7} {'round ms':>9} {'draft':>7} {'verify':>7} "
        f"{'tree+commit':>11} {'tok/s':>8} {'vs AR':>6} {'IQR':>11}"
    )
    for budget, r in by_budget.items():
        for t, s in [("all", r["all"]), *r["by_type"].items()]:
            sp = s.get("speedup_vs_ar")
            iqr = f"{s['speedup_iqr'][0]:.2f}-{s['speedup_iqr'][1]:.2f}" if sp else "-"
            print(
                f"  {budget:>6} {t:<6} {s['commit_mean']:>7.2f} {s['step_ms']:>9.3f} "
                f"{s['draft_ms']:>7.3f} {s['verify_ms']:>7.3f} "
                f"{s['tree_ms'] + s['commit_ms']:>11.3f} {s['decode_tok_s']:>8.1f} "
                f"{(f'{sp:.2f}x' if sp else '-'):>6} {iqr:>11}"
            )
    best = ", ".join(f"{k} {b}" for k, b in ddtree["best_budget"].items())
    own = "is" if ddtree["budget_is_best"] else "is NOT"
    print(f"  fastest budget: {best}; the DDTree arm's budget ({ddtree['budget']}) {own} the best")


def print_table(report: dict, max_new_tokens: int) -> None:
    types = sorted({t for r in report.values() for t in r["by_type"]})
    repeat = next(iter(report.values()))["repeat"]
    gpu = any(r.get("device_peak_mib") is not None for r in report.values())
    print(
        f"decode only (prefill excluded), ignore_eos, {max_new_tokens} new tokens per prompt, "
        f"{repeat} interleaved repeats"
    )
    print(
        f"{'method':<8} {'type':<6} {'tok/s':>8} {'commit':>7} {'step ms':>8} {'vs AR':>6} "
        f"{'IQR':>11} {'out':>3} {'noise':>6} {'KV MiB':>7}"
        + (f" {'GPU MiB':>8}" if gpu else "")
        + f" {'8g-rep':>6} lossless"
    )
    for m, r in report.items():
        for t, s in [("all", r)] + [(t, r["by_type"][t]) for t in types if t in r["by_type"]]:
            sp = s.get("speedup_vs_ar")
            iqr = f"{s['speedup_iqr'][0]:.2f}-{s['speedup_iqr'][1]:.2f}" if sp else "-"
            noise = f"{100 * s['repeat_spread']:.1f}%" if sp else "-"
            line = (
                f"{m:<8} {t:<6} {s['decode_tok_s']:>8.1f} {s['commit_mean']:>7.2f} "
                f"{s['step_ms']:>8.2f} {(f'{sp:.2f}x' if sp else '-'):>6} {iqr:>11} "
                f"{s.get('speedup_outliers', 0):>3} {noise:>6} {s['kv_cache_peak_mib']:>7.2f}"
            )
            if gpu:
                line += f" {s['device_peak_mib'] or 0:>8.1f}"
            same = "-" if r["lossless_vs_ar"] is None else r["lossless_vs_ar"]
            print(line + f" {s['repeated_8gram_frac']:>6.2f} {same}")
    print(
        "where a round goes (ms, medians over prompts): draft / tree, mask and positions / "
        "verify forward / commit (KV compaction, next draft context)"
    )
    for m, r in report.items():
        print(
            f"  {m:<8} {r['draft_ms']:.3f} / {r['tree_ms']:.3f} / {r['verify_ms']:.3f} / "
            f"{r['commit_ms']:.3f} (whole step {r['step_ms']:.3f})"
        )
    if "ddtree" in report:
        print_budgets(report["ddtree"])
    print(
        "tok/s and step ms: medians over prompts (each prompt: median of its repeats); "
        "vs AR: median over prompts of the paired ratio (each run against the AR run of the "
        "same prompt next to it), IQR its interquartile range, out the prompts outside "
        "1.5 IQR, noise the median spread of a prompt's repeated ratios; KV MiB: the largest "
        "KV cache a request grew to (target + drafter)"
        + ("; GPU MiB: CUDA allocator peak above the weights during a request" if gpu else "")
    )
    print(
        "8g-rep = share of output 8-grams seen earlier in the same output; high values mean "
        "looping text is inflating the commit length"
    )


def print_temperatures(reports: dict[str, dict]) -> None:
    """Each arm at every temperature side by side: tok/s, commit, the paired speedup over
    AR and the 8-gram repeat share. Greedy text that loops is easy to draft, so a commit
    that falls when sampling while the repeat share falls too is the loops going away."""
    temps = list(reports)
    print("temperatures side by side (all prompts):")
    print(f"  {'arm':<10}" + "".join(f" {'T=' + t:>32}" for t in temps))
    print(f"  {'':<10}" + f" {'tok/s':>8} {'commit':>7} {'vs AR':>7} {'8g-rep':>7}" * len(temps))
    for arm in reports[temps[0]]:
        cells = []
        for t in temps:
            r = reports[t].get(arm)
            if r is None:
                cells.append(f" {'-':>8} {'-':>7} {'-':>7} {'-':>7}")
                continue
            sp = r.get("speedup_vs_ar")
            cells.append(
                f" {r['decode_tok_s']:>8.1f} {r['commit_mean']:>7.2f} "
                f"{(f'{sp:.2f}x' if sp else '-'):>7} {r['repeated_8gram_frac']:>7.2f}"
            )
        print(f"  {arm:<10}" + "".join(cells))
