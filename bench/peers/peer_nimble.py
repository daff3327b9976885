"""Nimble (nimblephysics 0.10, LCP contact) on the peer scenes (run by
run.py inside bench/peers/.venv-nimble, numpy < 2).

The compiled module is imported directly (`nimblephysics_libs._nimblephysics`):
the package's `__init__` imports PyTorch for its autograd layer, which
the measurements do not use, so the venv holds nimblephysics without its
torch dependency (`pip install --no-deps`).

Scenes: each free body is a skeleton with a FreeJoint; the ground is a
welded box 20 x 20 x 1 m whose top face is the plane z = 0 (Nimble's
collision detector has no plane-vs-box pair). Friction 0.5 on every body
node; Nimble's defaults otherwise.

Timed (time.perf_counter, medians):
* box_step: `world.step()` on the settled box, in batches.
* box_jacobian: `nimble.neural.forwardPass(world)` (one step, keeping the
  snapshot) + `snapshot.getStateJacobian(world)` (2nv x 2nv); a second
  figure adds `getActionJacobian(world)` (2nv x nv, the control).
* pile120 / sphere_pile: the whole run of `world.step()` calls.
"""

import argparse
import math
import sys
import time

import numpy as np
import nimblephysics_libs._nimblephysics as nimble

import common


def quat_to_rotvec(q):
    w, x, y, z = q
    s = math.sqrt(x * x + y * y + z * z)
    if s < 1e-15:
        return [0.0, 0.0, 0.0]
    th = 2 * math.atan2(s, w)
    return [x / s * th, y / s * th, z / s * th]


def ground(world, mu, top=0.0):
    floor = nimble.dynamics.Skeleton()
    floor.setName("ground")
    fj, fb = floor.createWeldJointAndBodyNodePair()
    T = nimble.math.Isometry3()
    T.set_translation([0.0, 0.0, top - 0.5])
    fj.setTransformFromParentBodyNode(T)
    fs = fb.createShapeNode(nimble.dynamics.BoxShape([20.0, 20.0, 1.0]))
    fs.createCollisionAspect()
    fb.setFrictionCoeff(mu)
    world.addSkeleton(floor)


def free_body(world, name, mass, inertia, shape, mu):
    sk = nimble.dynamics.Skeleton()
    sk.setName(name)
    _, body = sk.createFreeJointAndBodyNodePair()
    if shape["type"] == "sphere":
        s = nimble.dynamics.SphereShape(shape["radius"])
    elif shape["type"] == "box":
        s = nimble.dynamics.BoxShape([2 * h for h in shape["half_extents"]])
    else:
        raise ValueError(shape["type"])
    body.createShapeNode(s).createCollisionAspect()
    body.setMass(mass)
    body.setMomentOfInertia(*inertia)
    body.setFrictionCoeff(mu)
    world.addSkeleton(sk)
    return sk


def box(s, reps, batch, want_jac):
    world = nimble.simulation.World()
    world.setGravity([0.0, 0.0, -9.81])
    world.setTimeStep(s["dt"])
    a, m = s["edge"], s["mass"]
    sk = free_body(world, "box", m, [m * a * a / 6] * 3, {"type": "box", "half_extents": [a / 2] * 3}, s["friction"])
    ground(world, s["friction"])
    sk.setPositions(np.array([0.0, 0.0, 0.0, 0.0, 0.0, a / 2]))
    for _ in range(s["settle_steps"]):
        world.step()
    z = float(sk.getPositions()[5])

    def steps(n):
        for _ in range(n):
            world.step()

    t = common.time_batched(steps, reps, batch, warmup=20)
    common.emit(
        engine="nimble", figure="box_step", median_s=t, reps=reps, batch=batch, z=z, penetration=a / 2 - z,
        vz=float(sk.getVelocities()[5]), z_after_timing=float(sk.getPositions()[5]),
    )
    if want_jac:
        out = {}

        def jac(n):
            for _ in range(n):
                snap = nimble.neural.forwardPass(world)
                out["J"] = snap.getStateJacobian(world)

        def jac_u(n):
            for _ in range(n):
                snap = nimble.neural.forwardPass(world)
                out["J"] = snap.getStateJacobian(world)
                out["B"] = snap.getActionJacobian(world)

        jr = max(reps // 2, 20)
        t = common.time_batched(jac, jr, 1, warmup=5)
        t_u = common.time_batched(jac_u, jr, 1, warmup=5)
        nv = world.getNumDofs()
        # Nimble's FreeJoint velocity is [angular, linear]: vz is index 5.
        common.emit(
            engine="nimble", figure="box_jacobian", median_s=t, reps=jr,
            method="forwardPass + getStateJacobian", rows=2 * nv, cols=2 * nv,
            median_s_with_control=t_u, dvz_duz=float(out["B"][nv + 5, 5]), dvx_dux=float(out["B"][nv + 3, 3]),
            z_after=float(sk.getPositions()[5]),
        )


def sphere_penetration(pos, radii, ground_z):
    """Largest overlap of spheres with each other and the ground."""
    worst = float(np.max(radii - (pos[:, 2] - ground_z)))
    diff = pos[:, None, :] - pos[None, :, :]
    dist = np.sqrt((diff**2).sum(-1))
    overlap = radii[:, None] + radii[None, :] - dist
    np.fill_diagonal(overlap, -np.inf)
    return max(worst, float(overlap.max()))


def pile(name, sc, limit):
    for p in sc["statics"]:
        if [abs(x) for x in p["normal"]] != [0.0, 0.0, 1.0] or p["normal"][2] != 1.0:
            raise ValueError("the Nimble rebuild handles a horizontal ground plane only")
    world = nimble.simulation.World()
    world.setGravity(sc["gravity"])
    world.setTimeStep(sc["dt"])
    sks = []
    for b in sc["bodies"]:
        if b["shape"]["type"] != "sphere":
            raise ValueError("the Nimble pile handles spheres only")
        sks.append(free_body(world, b["name"], b["mass"], b["inertia"], b["shape"], b["friction"]))
    top = sc["statics"][0]["offset"]
    ground(world, sc["statics"][0]["friction"], top)
    q0 = []
    v0 = []
    for b in sc["bodies"]:
        q0 += quat_to_rotvec(b["orientation"]) + b["position"]
        v0 += b["angular_velocity"] + b["velocity"]  # identity orientation: body = world frame
    radii = np.array([b["shape"]["radius"] for b in sc["bodies"]])
    n = len(sc["bodies"])
    world.setPositions(np.array(q0))
    world.setVelocities(np.array(v0))
    steps = sc["steps"]
    # One timed run; positions recorded (a copy per step) for the checks.
    t0 = time.perf_counter()
    traj = []
    done = 0
    for _ in range(steps):
        world.step()
        traj.append(world.getPositions())
        done += 1
        if time.perf_counter() - t0 > limit:
            break
    wall = time.perf_counter() - t0
    pens = [sphere_penetration(q.reshape(n, 6)[:, 3:], radii, top) for q in traj]
    last = traj[-1].reshape(n, 6)
    finite = bool(np.all(np.isfinite(last)))
    rec = dict(
        engine="nimble", figure=name, bodies=n, steps=steps, steps_done=done, reps=1,
        failed_steps=0 if finite else 1, max_penetration=max(0.0, max(pens)),
        min_body_z=float(last[:, 5].min()),
    )
    if done < steps:
        rec.update(median_s=None, timed_out_after_s=wall, extrapolated_s=wall / done * steps)
    else:
        rec.update(median_s=wall)
    common.emit(**rec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", default=None)
    ap.add_argument("--only", default="box,box_jacobian,pile120,sphere_pile")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--pile-limit", type=float, default=300.0, help="seconds before a pile run is abandoned")
    a = ap.parse_args()
    only = set(a.only.split(","))
    sc = common.load_scenes(a.scenes)
    batch = sc["timing"]["batch"]
    try:
        from importlib.metadata import version

        v = version("nimblephysics")
    except Exception:
        v = "?"
    common.emit(engine="nimble", figure="version", version=v)
    if "box" in only or "box_jacobian" in only:
        box(sc["box"], a.reps, batch, "box_jacobian" in only)
    if "pile120" in only:
        pile("pile120", common.pile120_scene(sc["pile120"]), a.pile_limit)
    if "sphere_pile" in only:
        pile("sphere_pile", common.read_scene_toml(sc["sphere_pile"]["toml"]), a.pile_limit)


if __name__ == "__main__":
    sys.exit(main())
