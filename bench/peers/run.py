#!/usr/bin/env python3
"""dualsim against MuJoCo, Nimble, Pinocchio and Crocoddyl on the same scenes, in one run.

    bench/peers/run.sh [--out FILE] [--rounds 3] [--reps 200] [--only ...]

Sets up three virtual environments on first use (or with --setup):
bench/peers/.venv (mujoco 3.x, pin; numpy 2), bench/peers/.venv-nimble
(nimblephysics 0.10 with numpy < 2; Pinocchio's wheels need numpy >= 2.2
and Nimble's need numpy < 2, so they cannot share one) and
bench/peers/.venv-croc (crocoddyl 3.2.1 with the pin it was built against,
4.0.0, and example-robot-data). Builds and runs `examples/peers_dualsim.rs`
and, for the `ur5_ddp` figure, the `dualsim` command (`optimize --method
ddp`), runs the peer scripts, and prints a markdown table of medians with
the ratio dualsim / peer (< 1: dualsim is faster), plus the quantities
that show the engines simulate the same thing. See README.md in this
directory.

This script itself needs only the Python standard library (3.11+).
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import scenes  # noqa: E402
import ur5_ddp  # noqa: E402

VENV = os.path.join(HERE, ".venv")
VENV_NIMBLE = os.path.join(HERE, ".venv-nimble")
REQ_MAIN = ["mujoco>=3,<4", "pin>=3"]
VENV_CROC = os.path.join(HERE, ".venv-croc")
# Crocoddyl and the robot it loads. Its own venv: crocoddyl 3.2.1's wheel
# (libcrocoddyl) was built against libpinocchio 4.0.0 but declares any
# libpinocchio, and with pin / libpinocchio 4.1.0 (what `pin>=3` in .venv
# resolves to) its FreeFwdDynamics computes the accelerations without
# gravity (pin.aba with model.gravity = 0, exactly) and a frame-translation
# cost crashes in calcDiff. With pin 4.0.0 it agrees with pin.aba exactly (peer_crocoddyl.py
# checks this and refuses to time otherwise).
REQ_CROC = ["crocoddyl==3.2.1", "pin==4.0.0", "example-robot-data==5.0.0"]
REQ_NIMBLE_DEPS = ["numpy<2"]
REQ_NIMBLE = ["nimblephysics>=0.10,<0.11"]

FAST = ["box", "box_jacobian", "humanoid"]
PILES = ["pile120", "sphere_pile"]
OPT = ["ur5_ddp"]  # one run each, after the rounds (ur5_ddp.py)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def py(venv):
    return os.path.join(venv, "bin", "python")


def sh(cmd, **kw):
    log("+", " ".join(shlex.quote(c) for c in cmd))
    return subprocess.run(cmd, check=True, **kw)


def nimble_python():
    """An interpreter nimblephysics 0.10 has wheels for (CPython 3.8-3.11 on
    linux x86_64): this one if it qualifies, else python3.11 … 3.8 on PATH."""
    if sys.version_info[:2] <= (3, 11):
        return sys.executable
    for v in ("3.11", "3.10", "3.9", "3.8"):
        exe = shutil.which(f"python{v}")
        if exe:
            return exe
    return sys.executable


def make_venv(path, steps, python=sys.executable):
    """Creates `path` and runs the pip `steps` (lists of pip arguments)."""
    if os.path.exists(path):
        shutil.rmtree(path)
    sh([python, "-m", "venv", path])
    sh([py(path), "-m", "pip", "install", "-q", "--upgrade", "pip"])
    for s in steps:
        sh([py(path), "-m", "pip", "install", "-q", *s])
    with open(os.path.join(path, MARKER), "w") as fh:
        fh.write(json.dumps(steps) + "\n")


def ready(path, steps):
    """True when `path` was set up completely with these `steps`."""
    try:
        with open(os.path.join(path, MARKER)) as fh:
            return json.loads(fh.read())[: len(steps)] == steps
    except (OSError, ValueError):
        return False


MARKER = "peers-installed.json"


def setup(force):
    ok = {"main": ready(VENV, [REQ_MAIN]),
          "croc": ready(VENV_CROC, [REQ_CROC]),
          "nimble": ready(VENV_NIMBLE, [REQ_NIMBLE_DEPS, ["--no-deps", *REQ_NIMBLE]])}
    if force or not ok["main"]:
        make_venv(VENV, [REQ_MAIN])
        ok["main"] = True
    if force or not ok["croc"]:
        try:
            make_venv(VENV_CROC, [REQ_CROC])
            ok["croc"] = True
        except subprocess.CalledProcessError as e:
            log(f"crocoddyl could not be installed: {e}")
            log("the ur5_ddp figure will have no Crocoddyl column")
    if force or not ok["nimble"]:
        try:
            # --no-deps: nimblephysics declares torch (its optional autograd
            # layer, several GB with CUDA); the measurements use the
            # compiled module only.
            npy = nimble_python()
            extra = [] if npy == sys.executable else [["tomli"]]
            make_venv(VENV_NIMBLE, [REQ_NIMBLE_DEPS, ["--no-deps", *REQ_NIMBLE], *extra], npy)
            ok["nimble"] = True
        except subprocess.CalledProcessError as e:
            log(f"nimblephysics could not be installed for Python {platform.python_version()}: {e}")
            log("Nimble's columns will be empty (wheels: CPython 3.8-3.11 on linux x86_64).")
            ok["nimble"] = False
    return ok


def run_jsonl(cmd, timeout, cwd=ROOT, env=None):
    """Runs a command printing JSON lines; returns the records (stderr passes through)."""
    log("+", " ".join(shlex.quote(c) for c in cmd))
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        log(f"timed out after {timeout} s")
        return [], f"timed out after {timeout} s"
    recs = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            recs.append(json.loads(line))
        elif line:
            log(line)
    err = None if p.returncode == 0 else f"exit status {p.returncode}"
    if err:
        log(f"{cmd[0]}: {err}")
    return recs, err


def fmt_t(s):
    if s is None:
        return "–"
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def fmt_ratio(a, b):
    if a is None or b is None or b == 0:
        return "–"
    r = a / b
    return f"{r:.3g}×"


def fmt_g(x, spec=".3g"):
    if x is None:
        return "–"
    if isinstance(x, float) and x != x:
        return "nan"
    return format(x, spec)


def git_rev():
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except OSError:
        return "?"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--setup", action="store_true", help="(re)create the virtual environments and exit")
    ap.add_argument("--out", help="also write the markdown report to this file (atomically)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of the fast figures (box, box_jacobian, humanoid); engines alternate within a "
                         "round and the figure is the median over rounds (default 3)")
    ap.add_argument("--reps", type=int, default=200, help="timed batches per fast figure and round (default 200)")
    ap.add_argument("--budget", type=float, default=20.0,
                    help="seconds per pile figure for repeating the run (at least one run; default 20)")
    ap.add_argument("--only", default=",".join(FAST + PILES + OPT), help="comma-separated figures")
    ap.add_argument("--nimble-pile-limit", type=float, default=300.0,
                    help="seconds after which a Nimble pile run is abandoned (extrapolated)")
    ap.add_argument("--no-build", action="store_true",
                    help="do not build the dualsim example (and, for ur5_ddp, the dualsim command) first")
    ap.add_argument("--ur5-repeats", type=int, default=20, help="ur5_ddp: Crocoddyl solves per start (median)")
    ap.add_argument("--ur5-gtol", type=float, default=1e-8,
                    help="ur5_ddp: dualsim's --gradient-tolerance (relative to the cost at the start; default 1e-8)")
    ap.add_argument("--ur5-max-iterations", type=int, default=500, help="ur5_ddp: dualsim's --max-iterations")
    ap.add_argument("--ur5-max-seconds", type=float, default=900.0, help="ur5_ddp: dualsim's --max-seconds")
    a = ap.parse_args()
    only = a.only.split(",")
    bad = set(only) - set(FAST + PILES + OPT)
    if bad:
        ap.error(f"unknown figures {sorted(bad)}")

    ok = setup(a.setup)
    if a.setup:
        return 0
    stale = scenes.stale()
    if stale:
        log(f"bench/peers/{', '.join(stale)} differ from scenes.py: run `python3 bench/peers/scenes.py`")
        return 1
    if "ur5_ddp" in only and scenes.ur5_source() is None:
        log("ur5_ddp: example-robot-data is not installed in bench/peers/.venv-croc, so bench/peers/ur5.urdf "
            "could not be checked against it; Crocoddyl's column will be empty")

    env = dict(os.environ)
    sim_figs = [f for f in only if f in FAST + PILES]
    if not a.no_build:
        if sim_figs:
            sh(["cargo", "build", "--release", "--features", "examples", "--example", "peers_dualsim"],
               cwd=ROOT, env=env)
        if "ur5_ddp" in only:
            sh(["cargo", "build", "--release", "--bin", "dualsim"], cwd=ROOT, env=env)
    target = env.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    exe = os.path.join(target, "release", "examples", "peers_dualsim")
    cli = os.path.join(target, "release", "dualsim")
    scenes_json = os.path.join(HERE, "scenes.json")
    common_args = ["--scenes", scenes_json, "--reps", str(a.reps)]

    # engine -> list of (command, figures it can do)
    engines = {
        "dualsim": lambda figs: [exe, *common_args, "--budget", str(a.budget), "--only", ",".join(figs)],
        "mujoco": lambda figs: [py(VENV), os.path.join(HERE, "peer_mujoco.py"), *common_args,
                                "--budget", str(a.budget), "--only", ",".join(figs)],
        "mujoco_pyramidal": lambda figs: [py(VENV), os.path.join(HERE, "peer_mujoco.py"), *common_args,
                                          "--budget", str(a.budget), "--cone", "pyramidal", "--only", ",".join(figs)],
        "nimble": lambda figs: [py(VENV_NIMBLE), os.path.join(HERE, "peer_nimble.py"), *common_args,
                                "--pile-limit", str(a.nimble_pile_limit), "--only", ",".join(figs)],
        "pin": lambda figs: [py(VENV), os.path.join(HERE, "peer_pin.py"), *common_args],
    }
    can = {
        "dualsim": set(FAST + PILES),
        "mujoco": {"box", "box_jacobian", "pile120", "sphere_pile"},
        "mujoco_pyramidal": {"box", "box_jacobian", "pile120", "sphere_pile"},
        "nimble": {"box", "box_jacobian", "pile120", "sphere_pile"} if ok["nimble"] else set(),
        "pin": {"humanoid"},
    }
    records = []  # (round, record)
    errors = []
    plan = [(r, [f for f in FAST if f in only]) for r in range(a.rounds)]
    plan[0] = (0, plan[0][1] + [f for f in PILES if f in only])
    for rnd, figs in plan:
        if not figs:
            continue
        log(f"== round {rnd + 1}/{a.rounds}: {', '.join(figs)}")
        for eng, cmd in engines.items():
            mine = [f for f in figs if f in can[eng]]
            if not mine:
                continue
            recs, err = run_jsonl(cmd(mine), timeout=3600)
            if err:
                errors.append(f"{eng} ({','.join(mine)}): {err}")
            records += [(rnd, r) for r in recs]
    if "ur5_ddp" in only:
        log("== ur5_ddp")
        recs, errs = ur5_ddp.run(cli, py(VENV_CROC) if ok["croc"] else None, scenes_json, a, run_jsonl, log)
        records += [(0, r) for r in recs]
        errors += errs

    report = make_report(records, errors, a, ok)
    print(report)
    if a.out:
        out = os.path.abspath(a.out)
        d = os.path.dirname(out)
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".peers-", suffix=".md.tmp", dir=d)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(report)
            os.chmod(tmp, 0o644)
            os.replace(tmp, out)
        except BaseException:
            os.unlink(tmp)
            raise
        log(f"wrote {out}")
    return 1 if errors else 0


def make_report(records, errors, a, ok):
    by = {}
    for rnd, r in records:
        by.setdefault((r["engine"], r["figure"]), []).append(r)

    def med(eng, fig, key="median_s"):
        xs = [r.get(key) for r in by.get((eng, fig), []) if r.get(key) is not None]
        return statistics.median(xs) if xs else None

    def first(eng, fig):
        rs = by.get((eng, fig), [])
        return rs[0] if rs else {}

    vers = {e: first(e, "version").get("version", "–") for e in ("mujoco", "nimble", "pin", "crocoddyl")}
    L = []
    L.append("## dualsim vs MuJoCo, Nimble, Pinocchio, Crocoddyl (one run)")
    L.append("")
    cmd = "bench/peers/run.sh " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    L.append(f"`{cmd.strip()}` — {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, dualsim {git_rev()}, "
             f"MuJoCo {vers['mujoco']}, Nimble {vers['nimble']}, Pinocchio {vers['pin']}, Crocoddyl {vers['crocoddyl']}; "
             f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}. "
             + (f"Medians of wall-clock timings; fast figures: median over {a.rounds} round(s) of the median of "
                f"{a.reps} timed batches, engines alternating within a round; piles: median of whole runs "
                f"(repeated while within {a.budget:g} s, at least once). "
                if any(f in FAST + PILES for f in a.only.split(",")) else "")
             + "Ratio = dualsim / peer (< 1: dualsim faster).")
    only = a.only.split(",")
    contact_figs = [f for f in ("box", "box_jacobian", "pile120", "sphere_pile") if f in only]
    if contact_figs:
        L.append("")
        L.append("| figure | what is timed | dualsim | MuJoCo (elliptic) | ratio | MuJoCo (pyramidal, default) | ratio | Nimble | ratio |")
        L.append("|---|---|---|---|---|---|---|---|---|")
    rows = [
        ("box", "box_step", "0.2 m cube of 1 kg resting on a plane (μ = 0.5), one step, h = 0.01",
         "one step of the settled box (chained steps, batches of 10)"),
        ("box_jacobian", "box_jacobian", "same, step + full one-step Jacobian",
         "dualsim: `step_jacobian_with` by `ift` w.r.t. q, v, u (12×18), chained as `rollout_jacobian` does; MuJoCo: `mj_step` + `mjd_transitionFD` "
         "centred (A 12×12, B 12×6); Nimble: `forwardPass` + `getStateJacobian` (12×12)"),
        ("pile120", "pile120", "120 spheres on a plane, 150 steps of 10 ms", "the whole rollout"),
        ("sphere_pile", "sphere_pile", "`examples/scenes/sphere_pile.toml` (125 spheres, 300 steps)", "the whole rollout"),
    ]
    for key, fig, label, what in rows:
        if key not in a.only.split(","):
            continue
        d = med("dualsim", fig)
        m, mp, n = med("mujoco", fig), med("mujoco_pyramidal", fig), med("nimble", fig)
        nrec = first("nimble", fig)
        ncell = fmt_t(n)
        if n is None and nrec.get("extrapolated_s"):
            ncell = f"> {fmt_t(nrec['timed_out_after_s'])} (abandoned after {nrec['steps_done']} steps)"
        L.append(f"| {label} | {what} | {fmt_t(d)} | {fmt_t(m)} | {fmt_ratio(d, m)} | {fmt_t(mp)} | "
                 f"{fmt_ratio(d, mp)} | {ncell} | {fmt_ratio(d, n)} |")
    if "box_jacobian" in a.only.split(","):
        nu = med("nimble", "box_jacobian", "median_s_with_control")
        if nu is not None:
            d = med("dualsim", "box_jacobian")
            L.append(f"| same, Nimble with the control Jacobian too | `forwardPass` + `getStateJacobian` + "
                     f"`getActionJacobian` | {fmt_t(d)} | | | | | {fmt_t(nu)} | {fmt_ratio(d, nu)} |")

    fixed = med("dualsim", "box_step", "median_s_from_settled_state")
    if fixed is not None:
        L.append("")
        L.append(f"dualsim's box step timed as the criterion benches do (every step from the same settled state "
                 f"rather than chained, so every solve starts cold): {fmt_t(fixed)}.")
    fixed_j = med("dualsim", "box_jacobian", "median_s_from_settled_state")
    if fixed_j is not None:
        L.append(f"dualsim's step + Jacobian from the same settled state each call (cold solve, `step_jacobian`): "
                 f"{fmt_t(fixed_j)}.")
    if "humanoid" in a.only.split(","):
        L.append("")
        info = first("dualsim", "humanoid_rnea").get("model", {})
        L.append(f"Humanoid-size tree `bench/peers/humanoid32.urdf` (floating base + 2 × 6-dof legs + 2 × 7-dof arms, "
                 f"nq = {info.get('nq', '?')}, nv = {info.get('nv', '?')}), loaded by dualsim's URDF importer and by "
                 f"`pin.buildModelFromUrdf(…, JointModelFreeFlyer())`; one call, median of batches of 10. "
                 f"Pinocchio is timed through its Python bindings: a call of `pin.rnea` on a one-joint model takes "
                 f"{fmt_t(med('pin', 'humanoid_rnea', 'call_floor_s'))}, included in its figures.")
        L.append("")
        L.append("| figure | dualsim | Pinocchio | ratio |")
        L.append("|---|---|---|---|")
        for fig, label in [
            ("humanoid_rnea", "RNEA τ(q, v, a)"),
            ("humanoid_aba", "ABA q̈(q, v, τ)"),
            ("humanoid_rnea_derivatives", "RNEA derivatives (∂τ/∂q, ∂τ/∂v)"),
            ("humanoid_aba_derivatives", "ABA derivatives (∂q̈/∂q, ∂q̈/∂v, ∂q̈/∂τ)"),
        ]:
            d, p = med("dualsim", fig), med("pin", fig)
            L.append(f"| {label} | {fmt_t(d)} | {fmt_t(p)} | {fmt_ratio(d, p)} |")

    # Comparability.
    if contact_figs:
        L.append("")
        L.append("Same physics? (values from the first round)")
        L.append("")
        L.append("| check | dualsim | MuJoCo (elliptic) | MuJoCo (pyramidal) | Nimble |")
        L.append("|---|---|---|---|---|")
    E = ["dualsim", "mujoco", "mujoco_pyramidal", "nimble"]

    def row(label, fig, key, spec=".3g"):
        L.append(f"| {label} | " + " | ".join(fmt_g(first(e, fig).get(key), spec) for e in E) + " |")

    if "box" in a.only.split(","):
        row("box: height of the centre after settling (m; 0.1 = touching)", "box_step", "z", ".6f")
        row("box: penetration after settling (m)", "box_step", "penetration", ".2e")
        row("box: height after the timed steps (m)", "box_step", "z_after_timing", ".6f")
    if "box_jacobian" in a.only.split(","):
        row("box: ∂v_z⁺/∂u_z (s/kg; 0 when the contact holds, h/m = 0.01 free)", "box_jacobian", "dvz_duz", ".3g")
        row("box: ∂v_x⁺/∂u_x (s/kg; 0 when friction sticks)", "box_jacobian", "dvx_dux", ".3g")
    for fig in PILES:
        if fig not in a.only.split(","):
            continue
        L.append(f"| {fig}: steps done / failed | " + " | ".join(
            (f"{first(e, fig).get('steps_done', '–')} / {first(e, fig).get('failed_steps', '–')}"
             + (f" (+{first(e, fig)['capped_steps']} capped)" if first(e, fig).get("capped_steps") else ""))
            if first(e, fig) else "–" for e in E) + " |")
        row(f"{fig}: largest penetration over the run (m)", fig, "max_penetration", ".2e")
        row(f"{fig}: lowest sphere centre at the end (m; r = 0.1)", fig, "min_body_z", ".4f")
        row(f"{fig}: median solver iterations per step", fig, "median_iterations", "")
    if "humanoid" in a.only.split(","):
        dv, pv = first("dualsim", "humanoid_values"), first("pin", "humanoid_values")
        if dv and pv:
            dt = max(abs(x - y) for x, y in zip(dv["tau"], pv["tau"]))
            dq = max(abs(x - y) for x, y in zip(dv["ddq"], pv["ddq"]))
            st = max(abs(x) for x in pv["tau"])
            sq = max(abs(x) for x in pv["ddq"])
            L.append("")
            L.append(f"Humanoid: dualsim vs Pinocchio at the state of scenes.json (Pinocchio's results converted to "
                     f"dualsim's free-joint convention): max |Δτ| = {dt:.2e} (max |τ| = {st:.3g}), "
                     f"max |Δq̈| = {dq:.2e} (max |q̈| = {sq:.3g}).")
    if "ur5_ddp" in only:
        L += ur5_ddp.report([r for _, r in records], fmt_g, fmt_t)
        if not ok["croc"]:
            L.append("")
            L.append("Crocoddyl: not installed (see the setup messages); its rows are empty.")
    if not ok["nimble"] and contact_figs:
        L.append("")
        L.append("Nimble: not installed (no nimblephysics wheel for this Python); its columns are empty.")
    if errors:
        L.append("")
        L.append("Errors: " + "; ".join(errors))
    L.append("")
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
