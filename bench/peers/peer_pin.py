"""Pinocchio (`pin` from PyPI) on the humanoid-size tree (run by run.py
inside bench/peers/.venv).

The tree is `humanoid32.urdf` with a free-flyer root
(`pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())`), the URDF
dualsim imports with `BaseJoint::Floating`. The state of scenes.json is in
dualsim's conventions (quaternion [w x y z], world-frame base twist) and
is converted to Pinocchio's (quaternion [x y z w], body-frame twist); the
results are converted back and printed, so run.py can compare tau and
ddq with dualsim's.

Timed (time.perf_counter, median batch time / batch), through the Python
bindings: `pin.rnea`, `pin.aba`, `pin.computeRNEADerivatives`,
`pin.computeABADerivatives` (the forms that write into preallocated
arrays where the binding has them). `call_floor_s` is the same timing of
`pin.rnea` on a one-joint model: about what the Python call itself costs.
"""

import argparse
import sys

import numpy as np
import pinocchio as pin

import common


def quat_wxyz_to_R(q):
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def to_pin(q, v, a, tau):
    q, v, a, tau = map(np.array, (q, v, a, tau))
    R = quat_wxyz_to_R(q[3:7])
    qp = np.concatenate([q[:3], q[4:7], q[3:4], q[7:]])
    vl, wl = R.T @ v[:3], R.T @ v[3:6]
    vp = np.concatenate([vl, wl, v[6:]])
    ap = np.concatenate([R.T @ a[:3] - np.cross(wl, vl), R.T @ a[3:6], a[6:]])
    taup = np.concatenate([R.T @ tau[:3], R.T @ tau[3:6], tau[6:]])
    return qp, vp, ap, taup, R


def main():
    ap_ = argparse.ArgumentParser()
    ap_.add_argument("--scenes", default=None)
    ap_.add_argument("--reps", type=int, default=200)
    a_ = ap_.parse_args()
    sc = common.load_scenes(a_.scenes)
    s = sc["humanoid"]
    reps, batch = max(a_.reps, 100), max(sc["timing"]["batch"], 10)
    common.emit(engine="pin", figure="version", version=pin.__version__)
    model = pin.buildModelFromUrdf(common.repo_path(s["urdf"]), pin.JointModelFreeFlyer())
    data = model.createData()
    q, v, a, tau, R = to_pin(s["q"], s["v"], s["a"], s["tau"])
    assert (model.nq, model.nv) == (len(q), len(v)), (model.nq, model.nv)

    # Values in dualsim's conventions.
    t = pin.rnea(model, data, q, v, a).copy()
    tau_d = np.concatenate([R @ t[:3], R @ t[3:6], t[6:]])
    dd = pin.aba(model, data, q, v, tau).copy()
    vl, wl = v[:3], v[3:6]
    ddq_d = np.concatenate([R @ (dd[:3] + np.cross(wl, vl)), R @ dd[3:6], dd[6:]])
    common.emit(engine="pin", figure="humanoid_values", tau=tau_d.tolist(), ddq=ddq_d.tolist())

    nv = model.nv
    F = lambda: np.zeros((nv, nv), order="F")
    rq, rv, ra = F(), F(), F()
    aq, av, at = F(), F(), F()
    try:
        pin.computeRNEADerivatives(model, data, q, v, a, rq, rv, ra)
        pin.computeABADerivatives(model, data, q, v, tau, aq, av, at)
        inplace = True
    except Exception:
        inplace = False

    def rnea(n):
        for _ in range(n):
            pin.rnea(model, data, q, v, a)

    def aba(n):
        for _ in range(n):
            pin.aba(model, data, q, v, tau)

    def drnea(n):
        if inplace:
            for _ in range(n):
                pin.computeRNEADerivatives(model, data, q, v, a, rq, rv, ra)
        else:
            for _ in range(n):
                pin.computeRNEADerivatives(model, data, q, v, a)

    def daba(n):
        if inplace:
            for _ in range(n):
                pin.computeABADerivatives(model, data, q, v, tau, aq, av, at)
        else:
            for _ in range(n):
                pin.computeABADerivatives(model, data, q, v, tau)

    # The cost of a call through the bindings: RNEA of a one-joint model.
    tiny = pin.Model()
    j = tiny.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "j")
    tiny.appendBodyToJoint(j, pin.Inertia.Random(), pin.SE3.Identity())
    tdata = tiny.createData()
    z1 = np.zeros(1)

    def floor(n):
        for _ in range(n):
            pin.rnea(tiny, tdata, z1, z1, z1)

    fl = common.time_batched(floor, reps, batch, warmup=100)
    info = {"nq": model.nq, "nv": nv, "joints": model.njoints, "inplace_derivatives": inplace}
    for fig, fn in [
        ("humanoid_rnea", rnea),
        ("humanoid_aba", aba),
        ("humanoid_rnea_derivatives", drnea),
        ("humanoid_aba_derivatives", daba),
    ]:
        t = common.time_batched(fn, reps, batch, warmup=100)
        common.emit(engine="pin", figure=fig, median_s=t, reps=reps, batch=batch, call_floor_s=fl, model=info)


if __name__ == "__main__":
    sys.exit(main())
