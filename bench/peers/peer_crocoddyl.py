"""Crocoddyl (`crocoddyl` from PyPI) on the UR5 reaching problem (run by
run.py inside bench/peers/.venv-croc).

The problem (scenes.json `ur5_reach`, the same numbers as dualsim's
`ur5_reach.toml`): `example_robot_data.load("ur5")`'s model (fixed base,
6 revolute joints), `DifferentialActionModelFreeFwdDynamics` with
`ActuationModelFull`, `IntegratedActionModelEuler` with dt = 0.01 over 100
knots (terminal model with dt = 0), costs

    running  (× dt):  w_x · ½‖x ⊖ x*‖²   (ResidualModelState, x* = (q*, 0))
                    + w_u · ½‖u‖²       (ResidualModelControl, zero reference)
    terminal:         w_T · ½‖x ⊖ x*‖²

from x0 = (neutral posture, at rest), solved by `SolverFDDP` (default
thresholds, th_stop = 1e-9, at most `--maxiter` iterations, single-threaded
problem: `problem.nthreads = 1`).

Two starts are timed: Crocoddyl's default (`solve()` with xs = x0 at every
knot, us = 0, `is_feasible=False`: FDDP closes the gaps) and the feasible
one dualsim's DDP uses (xs = the rollout of us = 0). Each is solved
`--repeats` times (time.perf_counter around `solver.solve`, median).

Before timing it checks that Crocoddyl's dynamics are Pinocchio's
(`DifferentialActionModelFreeFwdDynamics.calc` against `pin.aba` at random
states) and that bench/peers/ur5.urdf (the mesh-free copy dualsim loads)
gives the same model as example-robot-data's file; it exits with status 1
if either differs by more than 1e-9.

`--eval FILE` instead evaluates given control sequences: FILE is JSON
`{"cases": [{"name": ..., "us": [[u_0], …], "trajectory": path or null}]}`;
for each it prints Crocoddyl's cost of the rollout, the exact gradient
norm ‖∇J(u)‖ (adjoint pass over Crocoddyl's derivatives) and, given a
dualsim trajectory.json, the largest state difference along the rollout.
"""

import argparse
import json
import statistics
import sys
import time

import crocoddyl
import example_robot_data
import numpy as np
import pinocchio as pin

import common


def build(p, model):
    state = crocoddyl.StateMultibody(model)
    actuation = crocoddyl.ActuationModelFull(state)
    nu = actuation.nu
    xref = np.concatenate([np.array(p["q_target"], float), np.array(p["v_target"], float)])
    x_res = crocoddyl.ResidualModelState(state, xref, nu)
    u_res = crocoddyl.ResidualModelControl(state, nu)
    running = crocoddyl.CostModelSum(state, nu)
    running.addCost("state", crocoddyl.CostModelResidual(state, x_res), p["w_running_state"])
    running.addCost("control", crocoddyl.CostModelResidual(state, u_res), p["w_control"])
    terminal = crocoddyl.CostModelSum(state, nu)
    terminal.addCost("state", crocoddyl.CostModelResidual(state, x_res), p["w_terminal"])
    run_m = crocoddyl.IntegratedActionModelEuler(
        crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, running), p["dt"])
    term_m = crocoddyl.IntegratedActionModelEuler(
        crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, terminal), 0.0)
    x0 = np.concatenate([np.array(p["q0"], float), np.array(p["v0"], float)])
    problem = crocoddyl.ShootingProblem(x0, [run_m] * p["knots"], term_m)
    problem.nthreads = 1
    return problem, x0, nu


def rollout(problem, x0, us):
    xs = [x0.copy()]
    for m, d, u in zip(problem.runningModels, problem.runningDatas, us):
        m.calc(d, xs[-1], u)
        xs.append(np.array(d.xnext, copy=True))
    return xs


def cost_and_gradient(problem, x0, us):
    """J(us) on the rollout and its exact gradient (adjoint pass)."""
    xs = rollout(problem, x0, us)
    cost = problem.calc(xs, us)
    problem.calcDiff(xs, us)
    datas = problem.runningDatas
    lam = np.array(problem.terminalData.Lx)
    g = [None] * len(us)
    for k in range(len(us) - 1, -1, -1):
        d = datas[k]
        g[k] = d.Lu + d.Fu.T @ lam
        lam = d.Lx + d.Fx.T @ lam
    return cost, float(np.linalg.norm(np.concatenate(g))), xs


def checks(p, model):
    """Crocoddyl's dynamics vs pin.aba; ur5.urdf vs example-robot-data's model."""
    state = crocoddyl.StateMultibody(model)
    act = crocoddyl.ActuationModelFull(state)
    dam = crocoddyl.DifferentialActionModelFreeFwdDynamics(state, act, crocoddyl.CostModelSum(state, act.nu))
    dd, pd = dam.createData(), model.createData()
    mine = pin.buildModelFromUrdf(common.repo_path(p["urdf"]))
    md = mine.createData()
    rng = np.random.default_rng(7)
    d_croc, d_urdf, scale = 0.0, 0.0, 0.0
    for _ in range(20):
        q, v, u = rng.uniform(-3, 3, model.nq), rng.uniform(-3, 3, model.nv), rng.uniform(-50, 50, model.nv)
        a = pin.aba(model, pd, q, v, u).copy()
        dam.calc(dd, np.concatenate([q, v]), u)
        d_croc = max(d_croc, float(abs(dd.xout - a).max()))
        d_urdf = max(d_urdf, float(abs(pin.aba(mine, md, q, v, u) - a).max()))
        scale = max(scale, float(abs(a).max()))
    return {"croc_vs_pin_aba": d_croc, "ur5_urdf_vs_erd": d_urdf, "max_abs_qdd": scale,
            "same_layout": (mine.nq, mine.nv, list(mine.names)) == (model.nq, model.nv, list(model.names))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", default=None)
    ap.add_argument("--repeats", type=int, default=20, help="timed solves per start (median)")
    ap.add_argument("--maxiter", type=int, default=500)
    ap.add_argument("--eval", help="evaluate the control sequences of this JSON file instead of solving")
    a = ap.parse_args()
    p = common.load_scenes(a.scenes)["ur5_reach"]
    model = example_robot_data.load(p["erd_robot"]).model
    problem, x0, nu = build(p, model)
    n = p["knots"]

    if a.eval:
        with open(a.eval) as fh:
            cases = json.load(fh)["cases"]
        for c in cases:
            us = [np.array(u, float) for u in c["us"]]
            cost, gnorm, xs = cost_and_gradient(problem, x0, us)
            rec = {"engine": "crocoddyl", "figure": "ur5_eval", "case": c["name"], "cost": cost,
                   "gradient_norm": gnorm}
            if c.get("trajectory"):
                with open(c["trajectory"]) as fh:
                    frames = json.load(fh)["frames"]
                dq = max(float(abs(np.array(f["robots"][0]["q"]) - x[:6]).max()) for f, x in zip(frames, xs))
                dv = max(float(abs(np.array(f["robots"][0]["v"]) - x[6:]).max()) for f, x in zip(frames, xs))
                rec.update(max_dq=dq, max_dv=dv, frames=len(frames),
                           max_abs_v=max(float(abs(x[6:]).max()) for x in xs))
            common.emit(**rec)
        return 0

    common.emit(engine="crocoddyl", figure="version", version=crocoddyl.__version__, pin=pin.__version__,
                numpy=np.__version__)
    chk = checks(p, model)
    common.emit(engine="crocoddyl", figure="ur5_checks", **chk)
    if chk["croc_vs_pin_aba"] > 1e-9 or chk["ur5_urdf_vs_erd"] > 1e-9 or not chk["same_layout"]:
        common.log(f"peer_crocoddyl: the models disagree ({chk}); not timing (crocoddyl built against "
                   f"another Pinocchio than pin {pin.__version__}?)")
        return 1

    solver = crocoddyl.SolverFDDP(problem)
    zeros = [np.zeros(nu) for _ in range(n)]
    starts = {"default": ([x0.copy() for _ in range(n + 1)], False),
              "feasible": (rollout(problem, x0, zeros), True)}
    for name, (xs0, feasible) in starts.items():
        times, iters = [], set()
        for _ in range(max(a.repeats, 1)):
            xs_init, us_init = [x.copy() for x in xs0], [u.copy() for u in zeros]
            t0 = time.perf_counter()
            solver.solve(xs_init, us_init, a.maxiter, feasible)
            times.append(time.perf_counter() - t0)
            iters.add(solver.iter)
        us = [np.array(u, copy=True) for u in solver.us]
        cost, gnorm, _ = cost_and_gradient(problem, x0, us)
        it = solver.iter
        total = statistics.median(times)
        common.emit(engine="crocoddyl", figure="ur5_ddp", start=name, iterations=it,
                    iterations_seen=sorted(iters), median_s=total, per_iteration_s=total / max(it, 1),
                    repeats=len(times), cost=solver.cost, cost_rollout=cost, gradient_norm=gnorm,
                    stop=solver.stop, th_stop=solver.th_stop, converged=bool(solver.stop < solver.th_stop),
                    nthreads=problem.nthreads, us=[u.tolist() for u in us])
    return 0


if __name__ == "__main__":
    sys.exit(main())
