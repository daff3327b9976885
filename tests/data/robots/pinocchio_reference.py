#!/usr/bin/env python3
"""Writes tests/data/robots/pinocchio_reference.json: Pinocchio's ABA on the
vendored robots (fixed base), the reference of tests/all/dynamics/real_robots.rs.
Not run by the tests (they need no Python):

    python3 -m venv /tmp/pin && /tmp/pin/bin/pip install pin
    /tmp/pin/bin/python tests/data/robots/pinocchio_reference.py
"""
import json
import os

import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
ROBOTS = {
    "panda": "example-robot-data/robots/panda_description/urdf/panda.urdf",
    "ur5": "example-robot-data/robots/ur_description/urdf/ur5_robot.urdf",
    "solo12": "example-robot-data/robots/solo_description/robots/solo12.urdf",
}


def main():
    rng = np.random.default_rng(7)
    out = {"pinocchio": pin.__version__, "gravity": [0.0, 0.0, -9.81], "robots": {}}
    for name, rel in ROBOTS.items():
        m = pin.buildModelFromUrdf(os.path.join(HERE, rel))
        m.gravity.linear = np.array([0.0, 0.0, -9.81])
        d = m.createData()
        samples = []
        for _ in range(3):
            q = rng.uniform(-1.0, 1.0, m.nq)
            v = rng.uniform(-1.0, 1.0, m.nv)
            tau = rng.uniform(-1.0, 1.0, m.nv)
            a = pin.aba(m, d, q, v, tau)
            samples.append({"q": q.tolist(), "v": v.tolist(), "tau": tau.tolist(), "a": a.tolist()})
        mass = float(sum(i.mass for i in m.inertias))
        out["robots"][name] = {
            "urdf": rel,
            "joint_order": list(m.names)[1:],
            "nq": m.nq,
            "mass": mass,
            "samples": samples,
        }
    with open(os.path.join(HERE, "pinocchio_reference.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
