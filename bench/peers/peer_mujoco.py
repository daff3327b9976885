"""MuJoCo 3 on the peer scenes (run by run.py inside bench/peers/.venv).

Model settings: MuJoCo's defaults (Newton solver, soft contact with the
default solref/solimp, semi-implicit Euler, condim 3: sliding friction
only) with the friction cone given by `--cone`: `elliptic` (the closest
to dualsim's exact Coulomb cone; reported as engine `mujoco`) or
`pyramidal` (MuJoCo's default; engine `mujoco_pyramidal`). Friction 0.5
on every geom.

Timed (time.perf_counter, medians):
* box_step: `mj_step(m, d, nstep=batch)` on the settled box, / batch.
* box_jacobian: `mj_step` + `mjd_transitionFD(eps=1e-6, centred)` giving
  A (state, 2nv x 2nv) and B (control, 2nv x nu); the control is a
  generalized force on all 6 dofs (6 motors on the free joint).
* pile120 / sphere_pile: `mj_step(m, d, nstep=steps)` from the initial
  state (reset before each run), wall time of the whole run.
"""

import argparse
import math
import sys

import mujoco
import numpy as np

import common

CONE = "elliptic"
ENGINE = "mujoco"
MOTORS = "".join(
    f'<motor joint="root" gear="{" ".join("1" if i == k else "0" for i in range(6))}"/>' for k in range(6)
)


def fmt(x):
    return repr(float(x))


def box_xml(s):
    a, m, mu = s["edge"], s["mass"], s["friction"]
    I = m * a * a / 6
    return f"""<mujoco model="box">
  <option timestep="{fmt(s['dt'])}" cone="{CONE}" gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="ground" type="plane" size="0 0 1" friction="{mu} 0.005 0.0001"/>
    <body name="box" pos="0 0 {fmt(a / 2)}">
      <freejoint name="root"/>
      <inertial pos="0 0 0" mass="{fmt(m)}" diaginertia="{fmt(I)} {fmt(I)} {fmt(I)}"/>
      <geom type="box" size="{fmt(a / 2)} {fmt(a / 2)} {fmt(a / 2)}" friction="{mu} 0.005 0.0001" mass="0"/>
    </body>
  </worldbody>
  <actuator>{MOTORS}</actuator>
</mujoco>"""


def plane_geom(i, p):
    n = np.array(p["normal"], float)
    n /= np.linalg.norm(n)
    pos = n * p["offset"]
    # zaxis orients the plane's normal
    return (
        f'<geom name="static{i}" type="plane" size="0 0 1" pos="{" ".join(map(fmt, pos))}" '
        f'zaxis="{" ".join(map(fmt, n))}" friction="{p["friction"]} 0.005 0.0001"/>'
    )


def pile_xml(sc):
    parts = [
        f'<mujoco model="pile"><option timestep="{fmt(sc["dt"])}" cone="{CONE}" '
        f'gravity="{" ".join(map(fmt, sc["gravity"]))}"/><size memory="64M"/><worldbody>'
    ]
    parts += [plane_geom(i, p) for i, p in enumerate(sc["statics"])]
    for b in sc["bodies"]:
        sh = b["shape"]
        if sh["type"] == "sphere":
            g = f'type="sphere" size="{fmt(sh["radius"])}"'
        else:
            g = f'type="box" size="{" ".join(map(fmt, sh["half_extents"]))}"'
        parts.append(
            f'<body name="{b["name"]}" pos="{" ".join(map(fmt, b["position"]))}" '
            f'quat="{" ".join(map(fmt, b["orientation"]))}"><freejoint/>'
            f'<inertial pos="0 0 0" mass="{fmt(b["mass"])}" diaginertia="{" ".join(map(fmt, b["inertia"]))}"/>'
            f'<geom {g} mass="0" friction="{b["friction"]} 0.005 0.0001"/></body>'
        )
    parts.append("</worldbody></mujoco>")
    return "".join(parts)


def min_dist(d):
    return float(d.contact.dist[: d.ncon].min()) if d.ncon else float("nan")


def warnings(d):
    return int(sum(w.number for w in d.warning))


def box(s, reps, batch, want_jac):
    m = mujoco.MjModel.from_xml_string(box_xml(s))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    mujoco.mj_step(m, d, nstep=s["settle_steps"])
    half = s["edge"] / 2
    z = float(d.qpos[2])
    t = common.time_batched(lambda n: mujoco.mj_step(m, d, nstep=n), reps, batch, warmup=20)
    common.emit(
        engine=ENGINE, figure="box_step", median_s=t, reps=reps, batch=batch, z=z, penetration=half - z,
        contact_dist=min_dist(d), contacts=int(d.ncon), vz=float(d.qvel[2]), iterations=int(d.solver_niter[0]),
        warnings=warnings(d), z_after_timing=float(d.qpos[2]),
    )
    if want_jac:
        nx = 2 * m.nv + m.na
        A = np.zeros((nx, nx))
        B = np.zeros((nx, m.nu))

        def jac(n):
            for _ in range(n):
                mujoco.mjd_transitionFD(m, d, 1e-6, True, A, B, None, None)
                mujoco.mj_step(m, d)

        jr = max(reps // 2, 20)
        t = common.time_batched(jac, jr, 1, warmup=10)
        common.emit(
            engine=ENGINE, figure="box_jacobian", median_s=t, reps=jr, method="mjd_transitionFD centred + mj_step",
            rows=nx, cols=nx + m.nu, dvz_duz=float(B[m.nv + 2, 2]), dvx_dux=float(B[m.nv, 0]),
        )


def pile(name, sc, budget):
    m = mujoco.MjModel.from_xml_string(pile_xml(sc))
    d = mujoco.MjData(m)
    steps = sc["steps"]
    q0 = d.qpos.copy()
    v0 = np.zeros(m.nv)
    for i, b in enumerate(sc["bodies"]):
        v0[6 * i : 6 * i + 3] = b["velocity"]
        # MuJoCo's free-joint angular velocity is in the body frame; at the
        # identity orientation of these scenes it equals the world one.
        v0[6 * i + 3 : 6 * i + 6] = b["angular_velocity"]

    def reset():
        mujoco.mj_resetData(m, d)
        d.qpos[:] = q0
        d.qvel[:] = v0

    # Untimed validation run: penetration and warnings at every step.
    reset()
    worst, finite, niter = 0.0, True, []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        if d.ncon:
            worst = max(worst, -float(d.contact.dist[: d.ncon].min()))
        niter.append(int(d.solver_niter[0]))
    finite = bool(np.all(np.isfinite(d.qpos)))
    zmin = float(min(d.qpos[7 * i + 2] for i in range(len(sc["bodies"]))))
    warn = warnings(d)

    def run():
        reset()
        mujoco.mj_step(m, d, nstep=steps)

    t, n = common.time_runs(run, budget)
    niter.sort()
    common.emit(
        engine=ENGINE, figure=name, median_s=t, reps=n, bodies=len(sc["bodies"]), steps=steps,
        steps_done=steps if finite else 0, failed_steps=0 if finite else 1, warnings=warn,
        max_penetration=worst, min_body_z=zmin, median_iterations=niter[len(niter) // 2],
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", default=None)
    ap.add_argument("--only", default="box,box_jacobian,pile120,sphere_pile")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--budget", type=float, default=20.0)
    ap.add_argument("--cone", choices=["elliptic", "pyramidal"], default="elliptic")
    a = ap.parse_args()
    global CONE, ENGINE
    CONE = a.cone
    ENGINE = "mujoco" if a.cone == "elliptic" else "mujoco_pyramidal"
    only = set(a.only.split(","))
    sc = common.load_scenes(a.scenes)
    batch = sc["timing"]["batch"]
    common.emit(engine=ENGINE, figure="version", version=mujoco.__version__)
    if "box" in only or "box_jacobian" in only:
        box(sc["box"], a.reps, batch, "box_jacobian" in only)
    if "pile120" in only:
        pile("pile120", common.pile120_scene(sc["pile120"]), a.budget)
    if "sphere_pile" in only:
        pile("sphere_pile", common.read_scene_toml(sc["sphere_pile"]["toml"]), a.budget)


if __name__ == "__main__":
    sys.exit(main())
