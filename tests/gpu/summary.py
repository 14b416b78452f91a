"""The summary table of a tests/gpu/run.sh run (standard library only).

  python tests/gpu/summary.py OUT_DIR [WALL_SECONDS]

Reads OUT_DIR/steps.tsv, pytest.xml, tests_report.jsonl and the benchmarks'
results.json; prints the steps, the test counts and failures, the agreement
figures, the benchmark ratios and the issue's speed goals (met or not, on a
GPU only), and writes the same to summary.md and summary.json. Missing or
broken inputs are reported as such, never fatal.
"""

import json
import os
import sys
import xml.etree.ElementTree as ET


def _load(path):
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError) as e:
    return {"_missing": f"{os.path.basename(os.path.dirname(path))}: {e}"}


def _f(v, fmt="{:.3g}"):
  if isinstance(v, bool) or not isinstance(v, (int, float)):
    return str(v)
  return fmt.format(v)


def _verdict(met: bool, failed: bool):
  """True (met), False (not met) or "unresolved" (the band reaches the bar)."""
  return True if met else (False if failed else "unresolved")


def steps(out):
  rows = []
  try:
    with open(os.path.join(out, "steps.tsv")) as f:
      for line in f:
        name, status, seconds, note = (line.rstrip("\n").split("\t") + [""])[:4]
        rows.append(dict(step=name, status=status, seconds=seconds, note=note))
  except OSError:
    pass
  return rows


def tests(out):
  path = os.path.join(out, "pytest.xml")
  try:
    root = ET.parse(path).getroot()
  except (OSError, ET.ParseError) as e:
    return {"error": f"no pytest.xml ({e})"}
  counts = {"passed": 0, "failed": 0, "skipped": 0}
  failures, skip_reasons = [], set()
  for case in root.iter("testcase"):
    name = f"{case.get('classname', '')}::{case.get('name', '')}"
    bad = case.find("failure")
    if bad is None:
      bad = case.find("error")
    skipped = case.find("skipped")
    if bad is not None:
      counts["failed"] += 1
      message = (bad.get("message") or bad.text or "").strip()
      failures.append(
        f"{name}: {message.splitlines()[0][:300] if message else ''}"
      )
    elif skipped is not None:
      counts["skipped"] += 1
      skip_reasons.add((skipped.get("message") or "").strip()[:200])
    else:
      counts["passed"] += 1
  return {**counts, "failures": failures, "skip_reasons": sorted(skip_reasons)}


def agreement(out):
  rows = []
  try:
    with open(os.path.join(out, "tests_report.jsonl")) as f:
      rows = [json.loads(line) for line in f if line.strip()]
  except (OSError, ValueError):
    pass
  return rows


def bench_mxfp4(r, gpu, goals):
  lines = []
  for name, row in r.get("linear", {}).items():
    if "error" in row:
      lines.append(f"linear {name}: ERROR {row['error']}")
    else:
      lines.append(
        f"linear {name}: quartet/dense {_f(row['quartet_over_dense'])} "
        f"(IQR {_f(row['ratio_iqr'][0])}-{_f(row['ratio_iqr'][1])}, "
        f"{_f(row['quartet_ms'])} vs {_f(row['dense_ms'])} ms)"
      )
  for name, row in r.get("gemm", {}).items():
    ratios = {k: v for k, v in row.items() if k.endswith("_over_bf16")}
    errs = {k: v for k, v in row.items() if k.endswith("_error")}
    lines.append(
      f"gemm {name}: bf16 {_f(row.get('bf16_ms'))} ms; "
      + ", ".join(f"{k} {_f(v)}" for k, v in ratios.items())
      + "".join(f"; {k}: {v}" for k, v in errs.items())
    )
  q = r.get("quantize", {})
  fractions = {k: v for k, v in q.items() if k.endswith("_fraction_of_copy")}
  lines.append(
    f"quantize: copy {_f(q.get('copy_gbps'))} GB/s; "
    + ", ".join(f"{k} {_f(v)}" for k, v in fractions.items())
    + "".join(f"; {k}: {v}" for k, v in q.items() if k.endswith("_error"))
  )
  if gpu:
    big = [
      row
      for name, row in r.get("linear", {}).items()
      if name.startswith("T8192_K8192_N8192_pallas") and "error" not in row
    ]
    if big:
      lo, hi = big[0]["ratio_iqr"]
      goals.append(
        (
          "Quartet linear fwd+bwd, Pallas, <= 1.5x bf16 dense at 8192^3",
          f"{_f(big[0]['quartet_over_dense'])} (IQR {_f(lo)}-{_f(hi)})",
          _verdict(hi <= 1.5, lo > 1.5),
        )
      )
    else:
      goals.append(
        (
          "Quartet linear fwd+bwd, Pallas, <= 1.5x bf16 dense at 8192^3",
          "not measured",
          None,
        )
      )
    best = max(fractions, key=fractions.get, default=None)
    goals.append(
      (
        "MXFP4 quantizer >= 50 % of copy bandwidth (best implementation)",
        f"{best} {_f(fractions[best])}" if best else "not measured",
        _verdict(fractions[best] >= 0.5, True) if best else None,
      )
    )
  return lines


def bench_mxfp4_ffi(r, gpu, goals):
  del gpu, goals
  lines = [f"GEMM path: {r.get('path')}"]
  for fmt in ("gemm", "nvfp4_gemm"):
    for shape, c in r.get(fmt, {}).items():
      lines.append(
        f"{fmt} {shape}: max rel err {_f(c['max_rel_err'])}, path "
        f"{c['path']}, bf16 dot / ffi {_f(c['speedup_vs_bf16_dot'])}"
      )
  for name, c in r.get("quantize", {}).items():
    lines.append(
      f"quantize {name}: codes equal {_f(c['codes_equal'], '{:.6f}')}, scales "
      f"equal {_f(c['scales_equal'], '{:.6f}')}, ffi {_f(c['ms_ffi'])} ms vs "
      f"xla {_f(c['ms_xla_reference'])} ms"
    )
  if "quartet_linear" in r:
    lines.append(
      "quartet_linear ffi vs xla: "
      + ", ".join(f"{k} {_f(v)}" for k, v in r["quartet_linear"].items())
    )
  return lines


def bench_cdflow(r, gpu, goals):
  del gpu, goals
  lines = []
  for n, row in sorted(r.get("per_n", {}).items(), key=lambda kv: int(kv[0])):
    lines.append(
      f"n={n}: logdet x{_f(row['logdet_speedup'])}, inverse (solve) "
      f"x{_f(row['inverse_speedup_vs_solve'])}, forward "
      f"x{_f(row['forward_speedup'])}, forward + log-det under grad "
      f"x{_f(row['forward_log_det_grad_speedup'])} (auto: {row['auto_path']})"
    )
  return lines


def bench_hns(r, gpu, goals):
  ratios = r.get("ratios", {})
  lines = ["vs CNN: " + ", ".join(f"{k} {_f(v)}" for k, v in ratios.items())]
  peer = r.get("peer")
  if not peer:
    lines.append("peer mode: not run")
    if gpu:
      goals.append(("HNS training >= 2x the official code", "not run", None))
    return lines
  for kind in ("train", "rollout"):
    p = peer[kind]
    lines.append(
      f"peer {kind}: ours {_f(p['speedup'])}x faster "
      f"[{_f(p['speedup_lo'])}, {_f(p['speedup_hi'])}] "
      f"({_f(1e3 * p['ours_s_per_step'])} vs "
      f"{_f(1e3 * p['official_s_per_step'])} ms/step)"
    )
  lines.append(
    f"peer parity: loss rel diff {_f(peer['loss_rel_diff'])}, dH/du max "
    f"rel err {_f(peer['grad_rel_max_err'])}, torch "
    f"{peer.get('torch_version')} on {peer.get('torch_device')}"
  )
  if gpu:
    t = peer["train"]
    goals.append(
      (
        "HNS training >= 2x the official code",
        f"{_f(t['speedup'])} [{_f(t['speedup_lo'])}, {_f(t['speedup_hi'])}]",
        _verdict(t["speedup_lo"] >= 2.0, t["speedup_hi"] < 2.0),
      )
    )
  return lines


BENCHES = {
  "bench_mxfp4": bench_mxfp4,
  "bench_hns": bench_hns,
  "bench_mxfp4_ffi": bench_mxfp4_ffi,
  "bench_cdflow": bench_cdflow,
}


def main(argv) -> int:
  out = argv[1]
  wall = argv[2] if len(argv) > 2 else "?"
  machine = ""
  try:
    with open(os.path.join(out, "logs", "machine.log")) as f:
      machine = [ln for ln in f if ln.startswith("jax backend device:")]
      machine = machine[-1].split(":", 1)[1].strip() if machine else ""
  except OSError:
    pass
  gpu = " gpu " in f" {machine} "
  text = [
    f"# tests/gpu/run.sh summary ({'GPU run' if gpu else 'CPU rehearsal'})",
    "",
    f"jax, backend, device: {machine or 'unknown'}; wall time {wall} s",
    "",
    "## Steps",
    "",
    "| step | status | s | note |",
    "|---|---|---|---|",
  ]
  step_rows = steps(out)
  text += [
    f"| {s['step']} | {s['status']} | {s['seconds']} | {s['note']} |"
    for s in step_rows
  ]
  t = tests(out)
  text += ["", "## gpu tests", ""]
  if "error" in t:
    text.append(t["error"])
  else:
    text.append(
      f"passed {t['passed']}, failed {t['failed']}, skipped {t['skipped']}"
    )
    text += [f"- FAILED {f}" for f in t["failures"]]
    text += [f"- skipped: {r}" for r in t["skip_reasons"]]
  rows = agreement(out)
  if rows:
    text += ["", "## Agreement figures (tests)", ""]
    for row in rows:
      values = ", ".join(f"{k} {_f(v)}" for k, v in row.items() if k != "test")
      text.append(f"- {row['test']}: {values}")
  goals = []
  results = {}
  for name, fn in BENCHES.items():
    r = _load(os.path.join(out, name, "results.json"))
    results[name] = r
    text += ["", f"## {name}", ""]
    if "_missing" in r:
      text.append(f"no results ({r['_missing']})")
      continue
    try:
      text += [f"- {line}" for line in fn(r, gpu, goals)]
    except (KeyError, TypeError, IndexError, ValueError) as e:
      text.append(f"results.json unreadable here: {type(e).__name__}: {e}")
  text += ["", "## Speed goals (issue 34)", ""]
  if not gpu:
    text.append("CPU rehearsal: the goals are for the GPU run.")
  for goal, value, met in goals:
    verdict = {True: "met", False: "NOT met", None: "not measured"}.get(
      met, "unresolved (its band reaches the bar)"
    )
    text.append(f"- {goal}: {value} -> {verdict}")
  report = "\n".join(text) + "\n"
  print(report)
  with open(os.path.join(out, "summary.md"), "w") as f:
    f.write(report)
  with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(
      dict(
        machine=machine,
        wall_seconds=wall,
        steps=step_rows,
        tests=t,
        agreement=rows,
        goals=[dict(goal=g, value=v, met=m) for g, v, m in goals],
        benchmarks=results,
      ),
      f,
      indent=1,
    )
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
