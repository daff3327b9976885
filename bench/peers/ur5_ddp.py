"""The `ur5_ddp` figure of run.py: dualsim's DDP against Crocoddyl's FDDP
on the UR5 reaching problem (scenes.json `ur5_reach`, dualsim scene
`ur5_reach.toml`). Standard library only; run.py calls `run` and
`report`.

Timed:
* Crocoddyl: `peer_crocoddyl.py` (SolverFDDP, median of `--repeats`
  solves, from Crocoddyl's default start and from the rollout of u = 0);
* dualsim: one `dualsim optimize ur5_reach.toml --method ddp --json
  --gradient-tolerance G` run (`wall_seconds` and `iterations` of its
  JSON; the process start and the scene loading are not included).

Then the two problems are checked to be the same: the zero controls,
Crocoddyl's optimal controls and dualsim's are each written into a copy
of the scene (`per_step`), simulated by `dualsim run` and evaluated by
`dualsim optimize --max-iterations 0` (dualsim's cost and gradient norm);
`peer_crocoddyl.py --eval` gives Crocoddyl's cost and exact gradient norm
of the same controls and the largest difference between its rollout and
dualsim's trajectory.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCENE = os.path.join(HERE, "ur5_reach.toml")


def scene_with_controls(us, path):
    """ur5_reach.toml with `us` (one row per step) as its per-step control."""
    with open(SCENE) as fh:
        text = fh.read()
    rows = ",\n".join("  [" + ", ".join(repr(float(x)) for x in u) + "]" for u in us)
    new, n = re.subn(r'(\[\[control\]\]\ntarget = "arm"\n)values = \[[^\]]*\]\n',
                     lambda m: m.group(1) + "per_step = [\n" + rows + ",\n]\n", text)
    if n != 1:
        raise ValueError("ur5_reach.toml: the [[control]] table is not where ur5_ddp.py expects it")
    new = new.replace('urdf = "ur5.urdf"', 'urdf = ' + json.dumps(os.path.join(HERE, "ur5.urdf")))
    with open(path, "w") as fh:
        fh.write(new)


def rows(flat, nu=6):
    return [flat[i:i + nu] for i in range(0, len(flat), nu)]


def run(exe, croc_python, scenes_json, a, run_jsonl, log):
    """Returns (records, errors)."""
    recs, errors = [], []
    croc = []
    if croc_python:
        croc, err = run_jsonl([croc_python, os.path.join(HERE, "peer_crocoddyl.py"), "--scenes", scenes_json,
                               "--repeats", str(a.ur5_repeats)], timeout=1800)
        if err:
            errors.append(f"crocoddyl (ur5_ddp): {err}")
        recs += croc
    cmd = [exe, "optimize", SCENE, "--method", "ddp", "--json", "--gradient-tolerance", repr(a.ur5_gtol),
           "--max-iterations", str(a.ur5_max_iterations), "--max-seconds", repr(a.ur5_max_seconds)]
    out, err = run_jsonl(cmd, timeout=a.ur5_max_seconds + 600)
    if err:
        errors.append(f"dualsim (ur5_ddp): {err}")
    ddp = out[0] if out else None
    if ddp:
        recs.append(dict(ddp, engine="dualsim", figure="ur5_ddp", command="dualsim " + " ".join(
            os.path.relpath(c, ROOT) if c == SCENE else c for c in cmd[1:])))

    # Same problem: three control sequences through both engines.
    n, nu = 100, 6
    with open(scenes_json) as fh:
        p = json.load(fh)["ur5_reach"]
    n = p["knots"]
    cases = [("zero controls", [[0.0] * nu for _ in range(n)])]
    cd = next((r for r in croc if r.get("figure") == "ur5_ddp" and r.get("start") == "default"), None)
    if cd:
        cases.append(("Crocoddyl's solution", cd["us"]))
    if ddp and ddp.get("solution"):
        cases.append(("dualsim's solution", rows(ddp["solution"]["arm.control"], nu)))
    tmp = tempfile.mkdtemp(prefix="ur5_ddp-")
    try:
        ev = []
        for i, (name, us) in enumerate(cases):
            s = os.path.join(tmp, f"case{i}.toml")
            scene_with_controls(us, s)
            d = os.path.join(tmp, f"case{i}")
            try:
                subprocess.run([exe, "run", s, "--json", "--out", d], cwd=ROOT, check=True,
                               stdout=subprocess.DEVNULL, timeout=600)
                o = subprocess.run([exe, "optimize", s, "--method", "lbfgs", "--max-iterations", "0", "--json"],
                                   cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True, timeout=600)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
                errors.append(f"dualsim (ur5_ddp check, {name}): {e}")
                continue
            o = json.loads(o.stdout)
            recs.append({"engine": "dualsim", "figure": "ur5_eval", "case": name, "cost": o["cost"][0],
                         "gradient_norm": o["gradient_norm"]})
            ev.append({"name": name, "us": us, "trajectory": os.path.join(d, "trajectory.json")})
        if croc_python and ev:
            f = os.path.join(tmp, "cases.json")
            with open(f, "w") as fh:
                json.dump({"cases": ev}, fh)
            r, err = run_jsonl([croc_python, os.path.join(HERE, "peer_crocoddyl.py"), "--scenes", scenes_json,
                                "--eval", f], timeout=600)
            if err:
                errors.append(f"crocoddyl (ur5_ddp check): {err}")
            recs += r
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return recs, errors


def report(records, fmt_g, fmt_t):
    """Markdown lines of the ur5_ddp figure."""
    def pick(eng, fig, **kw):
        for r in records:
            if r.get("engine") == eng and r.get("figure") == fig and all(r.get(k) == v for k, v in kw.items()):
                return r
        return {}

    ver = pick("crocoddyl", "version")
    d = pick("dualsim", "ur5_ddp")
    cds = {s: pick("crocoddyl", "ur5_ddp", start=s) for s in ("default", "feasible")}
    with open(os.path.join(HERE, "scenes.json")) as fh:
        p = json.load(fh)["ur5_reach"]
    L = ["", f"UR5 reaching without contact, dualsim's DDP vs Crocoddyl's FDDP (`bench/peers/ur5_reach.toml`: "
         f"example-robot-data's UR5 without its collision meshes, {p['knots']} knots of {p['dt'] * 1e3:g} ms, "
         f"explicit Euler as Crocoddyl's `IntegratedActionModelEuler`, target state q* = {p['q_target']} rad, "
         f"v* = 0, weights {p['w_terminal']:g} terminal, {p['w_running_state']:g} running (state), "
         f"{p['w_control']:g} control; from the neutral posture at rest). Crocoddyl {ver.get('version', '–')} "
         f"with pin {ver.get('pin', '–')} (numpy {ver.get('numpy', '–')}), `SolverFDDP`, single-threaded, "
         f"default thresholds, median of {cds['default'].get('repeats', '–')} solves; dualsim: one "
         f"`optimize --method ddp` run (`{d.get('command', '–')}`), time per iteration = wall time / "
         f"iterations. ‖∇J‖: each engine's exact gradient norm at its final controls.", "",
         "| engine | start | iterations | time / iteration | total time | final cost | ‖∇J‖ at the end | stopped |",
         "|---|---|---|---|---|---|---|---|"]
    if d:
        it = d.get("iterations") or 0
        w = d.get("wall_seconds")
        L.append(f"| dualsim DDP (exact second order) | rollout of u = 0 | {it} | "
                 f"{fmt_t(w / it if it and w else None)} | {fmt_t(w)} | "
                 f"{fmt_g((d.get('cost') or [None])[-1], '.10g')} | {fmt_g(d.get('gradient_norm'), '.2g')} | "
                 f"{d.get('termination', '–')} |")
    for s, label in (("default", "Crocoddyl's default (xs = x0, us = 0, infeasible)"),
                     ("feasible", "rollout of u = 0")):
        c = cds[s]
        if c:
            L.append(f"| Crocoddyl FDDP | {label} | {c['iterations']} | {fmt_t(c['per_iteration_s'])} | "
                     f"{fmt_t(c['median_s'])} | {fmt_g(c['cost'], '.10g')} | {fmt_g(c['gradient_norm'], '.2g')} | "
                     f"stop = {c['stop']:.2g} {'<' if c['converged'] else '≥'} th_stop = {c['th_stop']:g} |")
    c = cds["default"]
    if d and c and d.get("iterations") and d.get("wall_seconds"):
        per = d["wall_seconds"] / d["iterations"] / c["per_iteration_s"]
        tot = d["wall_seconds"] / c["median_s"]
        L.append("")
        L.append(f"dualsim / Crocoddyl (default start): {per:.3g}× per iteration, {tot:.3g}× in total "
                 f"(goal: ≤ 2× per iteration).")
        costs, times = d.get("cost") or [], d.get("times") or []
        hit = next((i for i, x in enumerate(costs) if x <= c["cost"]), None)
        if hit is not None and hit < len(times):
            L.append(f"dualsim's cost first reached Crocoddyl's final cost ({c['cost']:.10g}) after {hit} "
                     f"iterations, {fmt_t(times[hit])}.")
        elif costs:
            L.append(f"dualsim's cost did not reach Crocoddyl's final cost ({c['cost']:.10g}).")

    chk = pick("crocoddyl", "ur5_checks")
    L += ["", "Same problem? Each control sequence simulated and costed by both engines (dualsim: `run` and "
          "`optimize --max-iterations 0` on the scene with the controls written in; Crocoddyl: its rollout, "
          "`problem.calc`, and the exact gradient by an adjoint pass over `calcDiff`):", "",
          "| controls | Crocoddyl J | dualsim J | relative difference | ‖∇J‖ Crocoddyl | ‖∇J‖ dualsim | "
          "max \\|Δq\\| along the rollout (rad) | max \\|Δv\\| (rad/s) | max \\|v\\| along it |",
          "|---|---|---|---|---|---|---|---|---|"]
    for name in ("zero controls", "Crocoddyl's solution", "dualsim's solution"):
        ce, de = pick("crocoddyl", "ur5_eval", case=name), pick("dualsim", "ur5_eval", case=name)
        if not ce and not de:
            continue
        rel = (abs(ce["cost"] - de["cost"]) / abs(ce["cost"])) if ce and de and ce["cost"] else None
        L.append(f"| {name} | {fmt_g(ce.get('cost'), '.12g')} | {fmt_g(de.get('cost'), '.12g')} | "
                 f"{fmt_g(rel, '.2g')} | {fmt_g(ce.get('gradient_norm'), '.3g')} | "
                 f"{fmt_g(de.get('gradient_norm'), '.3g')} | {fmt_g(ce.get('max_dq'), '.2g')} | "
                 f"{fmt_g(ce.get('max_dv'), '.2g')} | {fmt_g(ce.get('max_abs_v'), '.3g')} |")
    if chk:
        L.append("")
        L.append(f"Crocoddyl's `FreeFwdDynamics` vs `pin.aba` at 20 random states: max |Δq̈| = "
                 f"{chk['croc_vs_pin_aba']:.2g}; `bench/peers/ur5.urdf` (mesh-free) vs example-robot-data's "
                 f"model in Pinocchio: max |Δq̈| = {chk['ur5_urdf_vs_erd']:.2g} (max |q̈| = "
                 f"{chk['max_abs_qdd']:.3g}), same joints: {chk['same_layout']}.")
    return L
