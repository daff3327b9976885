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
* `ur5_reach`: a contact-free reaching problem for dualsim's DDP and
  Crocoddyl's FDDP: the UR5 of example-robot-data (fixed base, 6 revolute
  joints), 100 knots of 10 ms, from the neutral posture at rest to a
  joint-space target state. `ur5.urdf` is example-robot-data's
  `ur_description/urdf/ur5_robot.urdf` without its `<collision>`
  elements (meshes, which dualsim's importer refuses), copied from the
  package installed in `bench/peers/.venv-croc`; `ur5_reach.toml` is the
  dualsim scene with Crocoddyl's costs converted to dualsim's weights
  (see `ur5_reach_toml`).
"""

import glob
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


# The UR5 reaching problem, in Crocoddyl's terms. Crocoddyl's cost with
# CostModelResidual (ActivationModelQuad, ½‖r‖²) and CostModelSum weights,
# running cost times dt (IntegratedActionModelEuler), terminal cost not:
#   J = Σ_{k<N} dt (w_x ½‖x_k ⊖ x*‖² + w_u ½‖u_k‖²) + w_T ½‖x_N ⊖ x*‖²
# (ResidualModelState: q ⊖ q* = q − q* for revolute joints, v − v*;
# ResidualModelControl: u, zero reference). dualsim's objective is
# ½ Σ w (y − target)² with per-step running and effort sums, not scaled by
# dt: its weights are w_T (final), dt·w_x (running, states 0 … N−1) and
# dt·w_u (effort), and the two objectives are the same function of the
# controls (factor 1).
UR5_ERD_VERSION = "5.0.0"
UR5_REACH = {
    "urdf": "bench/peers/ur5.urdf",
    "scene": "bench/peers/ur5_reach.toml",
    "erd_robot": "ur5",
    "dt": 0.01,
    "knots": 100,
    "q0": [0.0] * 6,
    "v0": [0.0] * 6,
    "q_target": [0.0, -1.0, 1.0, 0.0, 0.5, 0.0],
    "v_target": [0.0] * 6,
    "w_terminal": 1e3,
    "w_running_state": 1e-1,
    "w_control": 1e-3,
}


def ur5_source(venv=os.path.join(HERE, ".venv-croc")):
    """example-robot-data's ur5_robot.urdf inside `venv`, or None."""
    pat = os.path.join(venv, "lib", "python*", "site-packages", "cmeel.prefix", "share", "example-robot-data",
                       "robots", "ur_description", "urdf", "ur5_robot.urdf")
    hits = sorted(glob.glob(pat))
    return hits[0] if hits else None


def ur5_urdf(src):
    """The UR5 URDF text without its <collision> elements."""
    coll = re.findall(r"<collision>.*?</collision>", src, flags=re.S)
    meshes = sum("<mesh" in c for c in coll)
    body, n = re.subn(r"\n[ \t]*<collision>.*?</collision>", "", src, flags=re.S)
    if n == 0:
        raise ValueError("ur5_robot.urdf: no <collision> element found (a different file?)")
    if "<mesh" in re.sub(r"<visual>.*?</visual>", "", body, flags=re.S):
        raise ValueError("ur5_robot.urdf: a mesh is left outside <visual>")
    head = (f"<!-- Written by bench/peers/scenes.py from example-robot-data {UR5_ERD_VERSION}'s\n"
            f"     robots/ur_description/urdf/ur5_robot.urdf (Crocoddyl's example_robot_data.load(\"ur5\")):\n"
            f"     the same file without its {n} <collision> elements ({meshes} meshes, which dualsim's\n"
            f"     URDF importer refuses, and {n - meshes} primitive): no collision geometry, as in\n"
            f"     Crocoddyl's contact-free problem. The <visual> meshes are kept (dualsim does not\n"
            f"     read them). -->\n")
    i = body.index("?>") + 2 if body.startswith("<?xml") else 0
    return body[:i] + "\n" + head + body[i:].lstrip("\n")


def fnum(x):
    return repr(float(x))


def flist(xs):
    return "[" + ", ".join(fnum(x) for x in xs) + "]"


def ur5_reach_toml(p=UR5_REACH):
    """dualsim's scene of the UR5 reaching problem."""
    n, dt = 6, p["dt"]
    target = p["q_target"] + p["v_target"]
    return f"""# Written by bench/peers/scenes.py (do not edit): the UR5 reaching problem
# of bench/peers/peer_crocoddyl.py, the same problem as Crocoddyl's
#   running: IntegratedActionModelEuler(FreeFwdDynamics, dt = {dt:g}) with
#            {p['w_running_state']:g} * ResidualModelState(x*) + {p['w_control']:g} * ResidualModelControl (zero reference)
#   terminal: {p['w_terminal']:g} * ResidualModelState(x*)
# Crocoddyl: J = sum_k dt (w_x/2 |x_k - x*|^2 + w_u/2 |u_k|^2) + w_T/2 |x_N - x*|^2;
# dualsim sums its running and effort terms per step without dt, so their
# weights here are dt * w_x = {dt * p['w_running_state']:g} and dt * w_u = {dt * p['w_control']:g}
# (the final-state weight is w_T): the same function of the controls.
# No contact (no static geometry, no collision shapes): semi-implicit
# Euler on ABA, as Crocoddyl's Euler integrator (v' = v + dt a, q' = q + dt v').
[sim]
dt = {fnum(dt)}
steps = {p['knots']}
gravity = [0.0, 0.0, -9.81]

[[robot]]
name = "arm"
urdf = "ur5.urdf"
base = "fixed"
# The URDF has joint limits (no backend enforces them; Crocoddyl's
# FreeFwdDynamics does not either).
ignore_joint_limits = true
q = {flist(p['q0'])}
v = {flist(p['v0'])}

[[control]]
target = "arm"
values = {flist([0.0] * n)}

[objective]
of = ["arm.q", "arm.v"]
target = {flist(target)}
weights = {flist([p['w_terminal']] * 2 * n)}
wrt = ["arm.control"]

[[objective.running]]
of = ["arm.q", "arm.v"]
target = {flist(target)}
weights = {flist([dt * p['w_running_state']] * 2 * n)}
from = 0
to = {p['knots']}

[objective.effort]
weights = [{fnum(dt * p['w_control'])}]
target = [0.0]
"""


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
        "ur5_reach": UR5_REACH,
    }


def dumps(obj):
    """JSON with one line per innermost list of numbers."""
    text = json.dumps(obj, indent=1)
    return re.sub(r"\[[^\[\]{}]*\]", lambda m: " ".join(m.group(0).split()), text) + "\n"


def write(out_dir=HERE):
    """Writes the generated files; `ur5.urdf` only when example-robot-data
    is installed in bench/peers/.venv-croc (it is copied from there)."""
    files = {"scenes.json": dumps(scenes()), "humanoid32.urdf": humanoid_urdf(),
             "ur5_reach.toml": ur5_reach_toml()}
    src = ur5_source()
    if src:
        with open(src) as fh:
            files["ur5.urdf"] = ur5_urdf(fh.read())
    for name, text in files.items():
        with open(os.path.join(out_dir, name), "w") as fh:
            fh.write(text)
    return sorted(files), src


def stale(out_dir=HERE):
    """The generated files that differ from what `write` would write
    (`ur5.urdf` checked only when its source is installed)."""
    out = []
    try:
        with open(os.path.join(out_dir, "scenes.json")) as fh:
            if json.load(fh) != json.loads(json.dumps(scenes())):
                out.append("scenes.json")
    except (OSError, ValueError):
        out.append("scenes.json")
    expect = {"humanoid32.urdf": humanoid_urdf, "ur5_reach.toml": ur5_reach_toml}
    src = ur5_source()
    if src:
        with open(src) as fh:
            text = fh.read()
        expect["ur5.urdf"] = lambda: ur5_urdf(text)
    for name, make in expect.items():
        try:
            with open(os.path.join(out_dir, name)) as fh:
                if fh.read() != make():
                    out.append(name)
        except OSError:
            out.append(name)
    return out


def up_to_date(out_dir=HERE):
    return not stale(out_dir)


if __name__ == "__main__":
    names, src = write()
    print("wrote", ", ".join(os.path.join(HERE, n) for n in names))
    if not src:
        print("ur5.urdf not written: example-robot-data is not installed in bench/peers/.venv-croc "
              "(bench/peers/run.sh --setup)")
