"""The scenes of the peer comparison, defined once.

`python3 bench/peers/scenes.py` (re)writes `bench/peers/scenes.json` and
`bench/peers/humanoid32.urdf`, both committed. The dualsim side
(`examples/peers_dualsim.rs`) and the peers (`run.py`) read these files,
so every engine builds the same scene from the same numbers:

* `box`: a cube of edge 0.2 m and 1 kg (inertia m a^2/6) resting on the
  plane z = 0, friction 0.5 (body and ground), h = 0.01, started touching
  the plane at rest and settled for `settle_steps` steps before timing.
* `pile120`: 120 spheres of radius 0.1 m and 1 kg (solid-sphere inertia
  0.4 m r^2), friction 0.5, h = 0.01, 150 steps. The layout of dualsim's
  `benches/step.rs` (`sphere_pile(120)`): a grid of columns 0.25 m apart,
  20 columns per row, every fourth column stacked two high; every sphere
  starts at rest exactly touching the ground or the sphere below, so the
  pile holds 120 contacts in islands of 1-2 bodies.
* `sphere_pile`: `examples/scenes/sphere_pile.toml` (125 spheres in 25
  piles of five, 300 steps); read by dualsim's scene loader and, for the
  peers, by `run.py` with `tomllib`.
* `humanoid`: the 32-dof tree of dualsim's `benches/dynamics.rs` (a
  floating base, two 6-dof legs and two 7-dof arms, joint frames tilted by
  random rotations, centres of mass off the joint axes), written as URDF,
  plus one state (q, v, a) and a torque tau in dualsim's conventions
  (free joint: position, quaternion [w x y z], world-frame linear and
  angular velocity); `run.py` converts them to Pinocchio's free flyer
  (quaternion [x y z w], body-frame twist).
"""

import json
import math
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


class Rng:
    """xorshift64 -> uniform [-1, 1): the generator of benches/dynamics.rs."""

    def __init__(self, seed):
        self.s = seed

    def next(self):
        m = (1 << 64) - 1
        self.s ^= (self.s << 13) & m
        self.s ^= self.s >> 7
        self.s ^= (self.s << 17) & m
        return (self.s >> 11) / float(1 << 53) * 2.0 - 1.0


def pile120_positions(n=120, r=0.1, spacing=0.25, per_row=20):
    pos, k, col = [], 0, 0
    while k < n:
        x, y = (col % per_row) * spacing, (col // per_row) * spacing
        pos.append([x, y, r])
        k += 1
        if col % 4 == 3 and k < n:
            pos.append([x, y, 3 * r])
            k += 1
        col += 1
    return pos


def rotvec_to_matrix(w):
    th = math.sqrt(sum(c * c for c in w))
    if th < 1e-300:
        return [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    k = [c / th for c in w]
    K = [[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]]
    K2 = [[sum(K[i][m] * K[m][j] for m in range(3)) for j in range(3)] for i in range(3)]
    s, c = math.sin(th), 1.0 - math.cos(th)
    return [[(1.0 if i == j else 0.0) + s * K[i][j] + c * K2[i][j] for j in range(3)] for i in range(3)]


def matrix_to_rpy(R):
    """URDF rpy with R = Rz(yaw) Ry(pitch) Rx(roll)."""
    pitch = math.asin(max(-1.0, min(1.0, -R[2][0])))
    roll = math.atan2(R[2][1], R[2][2])
    yaw = math.atan2(R[1][0], R[0][0])
    return roll, pitch, yaw


def rotvec_to_quat_wxyz(w):
    th = math.sqrt(sum(c * c for c in w))
    if th < 1e-300:
        return [1.0, 0.0, 0.0, 0.0]
    s = math.sin(th / 2) / th
    return [math.cos(th / 2), w[0] * s, w[1] * s, w[2] * s]


def f(x):
    return repr(float(x))


def humanoid_urdf():
    """The tree of benches/dynamics.rs `humanoid()` as URDF text (nv = 32)."""
    rng = Rng(42)

    def link(name, mass):
        com = [rng.next() * 0.05, rng.next() * 0.05, rng.next() * 0.05 - 0.1]
        return (
            f'  <link name="{name}">\n'
            f'    <inertial><origin xyz="{f(com[0])} {f(com[1])} {f(com[2])}" rpy="0 0 0"/>'
            f'<mass value="{f(mass)}"/>'
            f'<inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"/></inertial>\n'
            f"  </link>\n"
        )

    head = ['<?xml version="1.0"?>\n<robot name="humanoid32">\n', link("pelvis", 8.0)]
    axes = ["0 0 1", "1 0 0", "0 1 0"]
    chains = {}
    for name, n, offset in [
        ("left_leg", 6, (0.0, 0.1, -0.1)),
        ("right_leg", 6, (0.0, -0.1, -0.1)),
        ("left_arm", 7, (0.0, 0.2, 0.4)),
        ("right_arm", 7, (0.0, -0.2, 0.4)),
    ]:
        parts = chains[name] = []
        parent = "pelvis"
        for k in range(n):
            w = [rng.next() * 0.1, rng.next() * 0.1, rng.next() * 0.1]
            roll, pitch, yaw = matrix_to_rpy(rotvec_to_matrix(w))
            xyz = offset if k == 0 else (0.0, 0.0, -0.25)
            child = f"{name}{k}"
            parts.append(
                f'  <joint name="{child}_joint" type="revolute">\n'
                f'    <parent link="{parent}"/><child link="{child}"/>\n'
                f'    <origin xyz="{f(xyz[0])} {f(xyz[1])} {f(xyz[2])}" rpy="{f(roll)} {f(pitch)} {f(yaw)}"/>\n'
                f'    <axis xyz="{axes[k % 3]}"/>\n'
                f'    <limit lower="-10" upper="10" effort="1000" velocity="1000"/>\n'
                f"  </joint>\n"
            )
            parts.append(link(child, 1.5))
            parent = child
    # The chains are drawn in the order of benches/dynamics.rs (same random
    # numbers) but written in alphabetical order of their joint names:
    # Pinocchio's parser (urdfdom) visits a link's children in that order,
    # dualsim's importer in file order; written this way both give the same
    # q and v layout (left_arm, left_leg, right_arm, right_leg).
    body = [p for name in sorted(chains) for p in chains[name]]
    return "".join(head + body + ["</robot>\n"])


def humanoid_state(nv=32):
    """(q, v, a, tau) in dualsim's conventions, seeded."""
    rng = Rng(1)
    r = lambda n: [rng.next() for _ in range(n)]
    base_p = r(3)
    base_q = rotvec_to_quat_wxyz(r(3))
    q = base_p + base_q + r(nv - 6)
    return q, r(nv), r(nv), r(nv)


def scenes():
    q, v, a, tau = humanoid_state()
    return {
        "about": "written by bench/peers/scenes.py; read by bench/peers/run.py and examples/peers_dualsim.rs",
        "timing": {"batch": 10},
        "box": {"edge": 0.2, "mass": 1.0, "friction": 0.5, "dt": 0.01, "settle_steps": 100},
        "pile120": {
            "radius": 0.1,
            "mass": 1.0,
            "friction": 0.5,
            "dt": 0.01,
            "steps": 150,
            "layout": "benches/step.rs sphere_pile(120): columns 0.25 m apart, 20 per row, every 4th column two high",
            "positions": pile120_positions(),
        },
        "sphere_pile": {"toml": "examples/scenes/sphere_pile.toml"},
        "humanoid": {"urdf": "bench/peers/humanoid32.urdf", "q": q, "v": v, "a": a, "tau": tau},
    }


def dumps(obj):
    """JSON with one line per innermost list of numbers."""
    text = json.dumps(obj, indent=1)
    return re.sub(r"\[[^\[\]{}]*\]", lambda m: " ".join(m.group(0).split()), text) + "\n"


def write(out_dir=HERE):
    with open(os.path.join(out_dir, "scenes.json"), "w") as fh:
        fh.write(dumps(scenes()))
    with open(os.path.join(out_dir, "humanoid32.urdf"), "w") as fh:
        fh.write(humanoid_urdf())


def up_to_date(out_dir=HERE):
    try:
        with open(os.path.join(out_dir, "scenes.json")) as fh:
            s = json.load(fh)
        with open(os.path.join(out_dir, "humanoid32.urdf")) as fh:
            u = fh.read()
    except OSError:
        return False
    return s == json.loads(json.dumps(scenes())) and u == humanoid_urdf()


if __name__ == "__main__":
    write()
    print("wrote", os.path.join(HERE, "scenes.json"), "and", os.path.join(HERE, "humanoid32.urdf"))
