// dualsim 3-D trajectory viewer: plain WebGL 1, no library, no network.
// Input: the global TRAJ (a `dualsim run --out` trajectory document).
// Reports its state in #status and document.title: "ok" once the first
// frame is drawn, "error: ..." otherwise (window.onerror in the page).
(function () {
  'use strict';
  const F = TRAJ.frames;
  const G = TRAJ.geometry || null;
  const statusEl = document.getElementById('status');
  function setStatus(s) { statusEl.textContent = s; document.title = s; }

  // ---------- small linear algebra (column-major 4x4) ----------
  function mul(a, b) {
    const o = new Float32Array(16);
    for (let c = 0; c < 4; c++) for (let r = 0; r < 4; r++) {
      let s = 0;
      for (let k = 0; k < 4; k++) s += a[k * 4 + r] * b[c * 4 + k];
      o[c * 4 + r] = s;
    }
    return o;
  }
  function ident() { const m = new Float32Array(16); m[0] = m[5] = m[10] = m[15] = 1; return m; }
  function perspective(fovy, aspect, near, far) {
    const f = 1 / Math.tan(fovy / 2), m = new Float32Array(16);
    m[0] = f / aspect; m[5] = f; m[10] = (far + near) / (near - far); m[11] = -1;
    m[14] = 2 * far * near / (near - far);
    return m;
  }
  function sub(a, b) { return [a[0] - b[0], a[1] - b[1], a[2] - b[2]]; }
  function add(a, b) { return [a[0] + b[0], a[1] + b[1], a[2] + b[2]]; }
  function scl(a, s) { return [a[0] * s, a[1] * s, a[2] * s]; }
  function dot(a, b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
  function cross(a, b) { return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]; }
  function norm(a) { return Math.sqrt(dot(a, a)); }
  function unit(a) { const n = norm(a); return n > 0 ? scl(a, 1 / n) : [0, 0, 1]; }
  function lookAt(eye, target, up) {
    const z = unit(sub(eye, target)), x = unit(cross(up, z)), y = cross(z, x);
    const m = new Float32Array(16);
    m[0] = x[0]; m[4] = x[1]; m[8] = x[2];
    m[1] = y[0]; m[5] = y[1]; m[9] = y[2];
    m[2] = z[0]; m[6] = z[1]; m[10] = z[2];
    m[12] = -dot(x, eye); m[13] = -dot(y, eye); m[14] = -dot(z, eye); m[15] = 1;
    return m;
  }
  // pose [x, y, z, w, qx, qy, qz] -> matrix
  function poseMat(p) {
    let w = p[3], x = p[4], y = p[5], z = p[6];
    const n = Math.sqrt(w * w + x * x + y * y + z * z) || 1;
    w /= n; x /= n; y /= n; z /= n;
    const m = new Float32Array(16);
    m[0] = 1 - 2 * (y * y + z * z); m[4] = 2 * (x * y - w * z); m[8] = 2 * (x * z + w * y);
    m[1] = 2 * (x * y + w * z); m[5] = 1 - 2 * (x * x + z * z); m[9] = 2 * (y * z - w * x);
    m[2] = 2 * (x * z - w * y); m[6] = 2 * (y * z + w * x); m[10] = 1 - 2 * (x * x + y * y);
    m[12] = p[0]; m[13] = p[1]; m[14] = p[2]; m[15] = 1;
    return m;
  }
  function apply(m, v) {
    return [m[0] * v[0] + m[4] * v[1] + m[8] * v[2] + m[12],
            m[1] * v[0] + m[5] * v[1] + m[9] * v[2] + m[13],
            m[2] * v[0] + m[6] * v[1] + m[10] * v[2] + m[14]];
  }
  function rot(m, v) {
    return [m[0] * v[0] + m[4] * v[1] + m[8] * v[2],
            m[1] * v[0] + m[5] * v[1] + m[9] * v[2],
            m[2] * v[0] + m[6] * v[1] + m[10] * v[2]];
  }

  // ---------- meshes (triangles, position + normal) ----------
  function Mesh() { this.v = []; }
  Mesh.prototype.tri = function (a, b, c) {
    const n = cross(sub(b, a), sub(c, a)), l = norm(n);
    if (!(l > 1e-14)) return;
    const u = scl(n, 1 / l);
    for (const p of [a, b, c]) this.v.push(p[0], p[1], p[2], u[0], u[1], u[2]);
  };
  Mesh.prototype.smooth = function (ps, ns) {
    for (let i = 0; i < 3; i++) this.v.push(ps[i][0], ps[i][1], ps[i][2], ns[i][0], ns[i][1], ns[i][2]);
  };
  const SEG = 28;
  // surface of revolution about z: profile [[r, z], ...] bottom to top
  function lathe(m, prof) {
    for (let i = 0; i + 1 < prof.length; i++) {
      for (let j = 0; j < SEG; j++) {
        const a0 = 2 * Math.PI * j / SEG, a1 = 2 * Math.PI * (j + 1) / SEG;
        const P = (k, a) => [prof[k][0] * Math.cos(a), prof[k][0] * Math.sin(a), prof[k][1]];
        m.tri(P(i, a0), P(i, a1), P(i + 1, a1));
        m.tri(P(i, a0), P(i + 1, a1), P(i + 1, a0));
      }
    }
  }
  function ellipsoid(m, r) {
    const NU = SEG, NV = 16;
    const pt = (i, j) => {
      const th = Math.PI * i / NV, ph = 2 * Math.PI * j / NU;
      const s = [Math.sin(th) * Math.cos(ph), Math.sin(th) * Math.sin(ph), -Math.cos(th)];
      return [[s[0] * r[0], s[1] * r[1], s[2] * r[2]], unit([s[0] / r[0], s[1] / r[1], s[2] / r[2]])];
    };
    for (let i = 0; i < NV; i++) for (let j = 0; j < NU; j++) {
      const a = pt(i, j), b = pt(i, j + 1), c = pt(i + 1, j + 1), d = pt(i + 1, j);
      if (i > 0) m.smooth([a[0], b[0], c[0]], [a[1], b[1], c[1]]);
      if (i < NV - 1) m.smooth([a[0], c[0], d[0]], [a[1], c[1], d[1]]);
    }
  }
  function arc(r, z0, a0, a1, n) { // quarter-circle profile points
    const out = [];
    for (let k = 0; k <= n; k++) { const a = a0 + (a1 - a0) * k / n; out.push([r * Math.cos(a), z0 + r * Math.sin(a)]); }
    return out;
  }
  function polygonFaces(m, faces) {
    for (const f of faces) for (let i = 1; i + 1 < f.length; i++) m.tri(f[0], f[i], f[i + 1]);
  }
  // shape -> list of {mesh | points, local matrix}
  function build(shape, local, out) {
    if (!shape) return;
    const m = new Mesh();
    switch (shape.type) {
      case 'sphere': ellipsoid(m, [shape.radius, shape.radius, shape.radius]); break;
      case 'ellipsoid': ellipsoid(m, shape.radii); break;
      case 'box': {
        const h = shape.half_extents, c = [];
        for (let i = 0; i < 8; i++) c.push([(i & 1 ? 1 : -1) * h[0], (i & 2 ? 1 : -1) * h[1], (i & 4 ? 1 : -1) * h[2]]);
        const q = [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]];
        for (const f of q) { m.tri(c[f[0]], c[f[1]], c[f[2]]); m.tri(c[f[0]], c[f[2]], c[f[3]]); }
        break;
      }
      case 'capsule': {
        const r = shape.radius, h = shape.half_length;
        const prof = [[0, -h - r]].concat(arc(r, -h, -Math.PI / 2, 0, 8).slice(1), arc(r, h, 0, Math.PI / 2, 8));
        lathe(m, prof); break;
      }
      case 'cylinder': {
        const r = shape.radius, h = shape.half_length;
        lathe(m, [[0, -h], [r, -h], [r, h], [0, h]]); break;
      }
      case 'cone': {
        const H = shape.height, R = H * Math.tan(shape.half_angle);
        lathe(m, [[0, -H / 4], [R, -H / 4], [0, 3 * H / 4]]); break;
      }
      case 'polytope': polygonFaces(m, shape.faces || []); break;
      case 'padded_polygon': {
        const V = shape.vertices || [], r = shape.radius, n = V.length;
        if (n < 3) break;
        const ring = [];
        for (let i = 0; i < n; i++) {
          const p = V[(i + n - 1) % n], c = V[i], q = V[(i + 1) % n];
          const e0 = [c[0] - p[0], c[1] - p[1]], e1 = [q[0] - c[0], q[1] - c[1]];
          let a0 = Math.atan2(-e0[0], e0[1]), a1 = Math.atan2(-e1[0], e1[1]);
          while (a1 < a0) a1 += 2 * Math.PI;
          for (let k = 0; k <= 4; k++) { const a = a0 + (a1 - a0) * k / 4; ring.push([c[0] + r * Math.cos(a), c[1] + r * Math.sin(a)]); }
        }
        const cx = V.reduce((s, v) => s + v[0], 0) / n, cy = V.reduce((s, v) => s + v[1], 0) / n;
        for (let i = 0; i < ring.length; i++) {
          const a = ring[i], b = ring[(i + 1) % ring.length];
          m.tri([cx, cy, r], [a[0], a[1], r], [b[0], b[1], r]);
          m.tri([cx, cy, -r], [b[0], b[1], -r], [a[0], a[1], -r]);
          m.tri([a[0], a[1], -r], [b[0], b[1], -r], [b[0], b[1], r]);
          m.tri([a[0], a[1], -r], [b[0], b[1], r], [a[0], a[1], r]);
        }
        break;
      }
      case 'bundle':
        for (const p of shape.parts || []) build(p.shape, mul(local, poseMat(p.pose)), out);
        return;
      case 'points': {
        const pts = [];
        for (const p of shape.points || []) pts.push(p[0], p[1], p[2]);
        out.push({ points: new Float32Array(pts), local: local });
        return;
      }
      default: return; // planes: drawn as grids
    }
    out.push({ tris: new Float32Array(m.v), local: local });
  }

  // ---------- GL setup ----------
  const canvas = document.getElementById('view');
  const gl = canvas.getContext('webgl', { antialias: true, preserveDrawingBuffer: true }) ||
             canvas.getContext('experimental-webgl', { preserveDrawingBuffer: true });
  if (!gl) throw new Error('WebGL is not available in this browser');
  function program(vs, fs) {
    const p = gl.createProgram();
    for (const [type, src] of [[gl.VERTEX_SHADER, vs], [gl.FRAGMENT_SHADER, fs]]) {
      const s = gl.createShader(type);
      gl.shaderSource(s, src); gl.compileShader(s);
      if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error('shader: ' + gl.getShaderInfoLog(s));
      gl.attachShader(p, s);
    }
    gl.bindAttribLocation(p, 0, 'aPos');
    if (vs.indexOf('aNrm') >= 0) gl.bindAttribLocation(p, 1, 'aNrm');
    gl.linkProgram(p);
    if (!gl.getProgramParameter(p, gl.LINK_STATUS)) throw new Error('link: ' + gl.getProgramInfoLog(p));
    return p;
  }
  const meshProg = program(
    'attribute vec3 aPos; attribute vec3 aNrm; uniform mat4 uVP; uniform mat4 uModel; varying vec3 vN;' +
    'void main(){ vN = (uModel * vec4(aNrm, 0.0)).xyz; gl_Position = uVP * uModel * vec4(aPos, 1.0); }',
    'precision mediump float; varying vec3 vN; uniform vec3 uColor;' +
    'void main(){ vec3 n = normalize(vN); float d = abs(dot(n, normalize(vec3(0.4, 0.3, 0.85))));' +
    ' float e = abs(dot(n, normalize(vec3(-0.6, -0.5, 0.2))));' +
    ' gl_FragColor = vec4(uColor * (0.3 + 0.6 * d + 0.2 * e), 1.0); }');
  const lineProg = program(
    'attribute vec3 aPos; uniform mat4 uVP; uniform mat4 uModel; uniform float uSize;' +
    'void main(){ gl_Position = uVP * uModel * vec4(aPos, 1.0); gl_PointSize = uSize; }',
    'precision mediump float; uniform vec3 uColor; void main(){ gl_FragColor = vec4(uColor, 1.0); }');
  const loc = (p, n) => gl.getUniformLocation(p, n);
  const U = {
    mVP: loc(meshProg, 'uVP'), mModel: loc(meshProg, 'uModel'), mColor: loc(meshProg, 'uColor'),
    lVP: loc(lineProg, 'uVP'), lModel: loc(lineProg, 'uModel'), lColor: loc(lineProg, 'uColor'), lSize: loc(lineProg, 'uSize'),
  };
  const A = {
    mPos: gl.getAttribLocation(meshProg, 'aPos'), mNrm: gl.getAttribLocation(meshProg, 'aNrm'),
    lPos: gl.getAttribLocation(lineProg, 'aPos'),
  };
  function upload(data, usage) {
    const b = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, b);
    gl.bufferData(gl.ARRAY_BUFFER, data, usage || gl.STATIC_DRAW);
    return b;
  }
  function colour(i, k) { // distinct hues
    const h = (i * 0.161 + (k || 0) * 0.05) % 1, s = 0.55, l = 0.55;
    const f = n => { const q = (n + h * 12) % 12; return l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(q - 3, 9 - q, 1)); };
    return [f(0), f(8), f(4)];
  }

  // ---------- scene items ----------
  // an item: {buf, count, kind: 'tris' | 'points', local, frame: (k) => matrix, color}
  const items = [];
  const nb = (TRAJ.bodies || []).length;
  const bodyIndex = {};
  (TRAJ.bodies || []).forEach((n, i) => { bodyIndex[n] = i; });
  function bodyMat(k, name) {
    const b = F[k].bodies.find(x => x.name === name);
    if (!b) return null;
    const q = b.orientation || [1, 0, 0, 0];
    return poseMat([b.position[0], b.position[1], b.position[2], q[0], q[1], q[2], q[3]]);
  }
  function addShape(shape, frame, color) {
    const out = [];
    build(shape, ident(), out);
    for (const o of out) {
      if (o.tris && o.tris.length) items.push({ kind: 'tris', buf: upload(o.tris), count: o.tris.length / 6, local: o.local, frame: frame, color: color });
      if (o.points && o.points.length) items.push({ kind: 'points', buf: upload(o.points), count: o.points.length / 3, local: o.local, frame: frame, color: color });
    }
  }
  // bounds of everything that moves, over the whole run
  let lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
  function grow(p) { for (let i = 0; i < 3; i++) { lo[i] = Math.min(lo[i], p[i]); hi[i] = Math.max(hi[i], p[i]); } }
  const GL0 = G ? (G.links || []) : [];
  for (const f of F) {
    for (const b of f.bodies) grow(b.position);
    (f.links || []).forEach((l, i) => {
      grow(l);
      const c = GL0[i] && GL0[i].com;
      if (c) grow(apply(poseMat(l), c));
    });
  }
  if (!isFinite(lo[0])) { lo = [-1, -1, 0]; hi = [1, 1, 1]; }
  const span = Math.max(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 0.5);
  const centre = scl(add(lo, hi), 0.5);

  const names = TRAJ.bodies || (F[0].bodies.map(b => b.name));
  if (G) {
    (G.bodies || []).forEach((b, i) => {
      const name = b.name;
      if (b.shape || !b.robot) addShape(b.shape || { type: 'sphere', radius: 0.03 * span }, k => bodyMat(k, name), colour(i));
    });
    (G.links || []).forEach((l, i) => {
      const ri = (TRAJ.robots || []).indexOf(l.robot);
      for (const s of l.shapes || []) {
        const local = poseMat(s.pose);
        addShape(s.shape, k => { const p = (F[k].links || [])[i]; return p ? mul(poseMat(p), local) : null; }, colour(nb + Math.max(ri, 0) * 2 + 4, i % 3));
      }
    });
    for (const s of G.statics || []) {
      if (s.shape && s.shape.type !== 'plane') {
        const m = poseMat(s.pose);
        addShape(s.shape, () => m, [0.62, 0.62, 0.6]);
      }
    }
  } else {
    names.forEach((name, i) => addShape({ type: 'sphere', radius: 0.03 * span }, k => bodyMat(k, name), colour(i)));
  }

  // ground grids of the static planes (a default grid at z = min when none)
  const gridLines = [], gridFill = [];
  function addGrid(point, normal) {
    const n = unit(normal);
    const e1 = unit(cross(n, Math.abs(n[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0])), e2 = cross(n, e1);
    const c = add(point, scl(n, dot(sub(centre, point), n) * 0)); // keep the plane's own point
    const off = sub(centre, c), o = add(c, add(scl(e1, dot(off, e1)), scl(e2, dot(off, e2))));
    const E = 1.2 * span + 0.5;
    let step = Math.pow(10, Math.floor(Math.log10(E)));
    while (E / step < 6) step /= 2;
    const nlines = Math.ceil(E / step);
    for (let i = -nlines; i <= nlines; i++) {
      const a = add(o, scl(e1, i * step)), b = add(o, scl(e2, i * step));
      gridLines.push(...add(a, scl(e2, -nlines * step)), ...add(a, scl(e2, nlines * step)));
      gridLines.push(...add(b, scl(e1, -nlines * step)), ...add(b, scl(e1, nlines * step)));
    }
    const L = nlines * step, p00 = add(o, add(scl(e1, -L), scl(e2, -L))), p10 = add(o, add(scl(e1, L), scl(e2, -L)));
    const p11 = add(o, add(scl(e1, L), scl(e2, L))), p01 = add(o, add(scl(e1, -L), scl(e2, L)));
    for (const p of [p00, p10, p11, p00, p11, p01]) gridFill.push(p[0], p[1], p[2], n[0], n[1], n[2]);
  }
  let planes = 0;
  if (G) for (const s of G.statics || []) {
    if (s.shape && s.shape.type === 'plane') {
      const m = poseMat(s.pose);
      const n = rot(m, s.shape.normal), p = apply(m, scl(unit(s.shape.normal), s.shape.offset / (norm(s.shape.normal) || 1)));
      addGrid(p, n); planes++;
    }
  }
  if (!planes) addGrid([0, 0, lo[2]], [0, 0, 1]); // no plane: at the lowest origin reached
  const gridBuf = upload(new Float32Array(gridLines)), gridCount = gridLines.length / 3;
  const fillBuf = upload(new Float32Array(gridFill)), fillCount = gridFill.length / 6;

  // robot skeletons: a stick from each link's origin to its children's
  // origins (their joints) and to the centres of its collision shapes
  const stickR = Math.min(0.012 * span, 0.02);
  const stick = { tris: null, count: 0 }, ball = { count: 0 }, head = { count: 0 };
  (function () {
    let m = new Mesh(); lathe(m, [[0, 0], [1, 0], [1, 1], [0, 1]]);
    stick.buf = upload(new Float32Array(m.v)); stick.count = m.v.length / 6;
    m = new Mesh(); ellipsoid(m, [1, 1, 1]);
    ball.buf = upload(new Float32Array(m.v)); ball.count = m.v.length / 6;
    m = new Mesh(); lathe(m, [[0, 0], [1, 0], [0, 1]]);
    head.buf = upload(new Float32Array(m.v)); head.count = m.v.length / 6;
  })();
  // matrix taking the unit z-segment of radius 1 to [a, b] with radius r
  function segMat(a, b, r) {
    const d = sub(b, a), len = norm(d);
    if (!(len > 1e-9)) return null;
    const z = scl(d, 1 / len), x = unit(cross(z, Math.abs(z[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0])), y = cross(z, x);
    const m = new Float32Array(16);
    m[0] = x[0] * r; m[1] = x[1] * r; m[2] = x[2] * r;
    m[4] = y[0] * r; m[5] = y[1] * r; m[6] = y[2] * r;
    m[8] = d[0]; m[9] = d[1]; m[10] = d[2];
    m[12] = a[0]; m[13] = a[1]; m[14] = a[2]; m[15] = 1;
    return m;
  }
  function ballMat(p, r) { const m = ident(); m[0] = m[5] = m[10] = r; m[12] = p[0]; m[13] = p[1]; m[14] = p[2]; return m; }
  const links = G ? (G.links || []) : [];
  function robotColour(l) { const ri = (TRAJ.robots || []).indexOf(l.robot); return colour(nb + Math.max(ri, 0) * 2 + 3); }
  function skeleton(k) { // [[a, b], ...] and joint points
    const P = F[k].links || [], segs = [], joints = [], coms = [];
    links.forEach((l, i) => {
      const p = P[i];
      if (!p) return;
      const o = [p[0], p[1], p[2]];
      if (l.parent !== null && l.parent !== undefined && P[l.parent]) {
        const q = P[l.parent]; segs.push([[q[0], q[1], q[2]], o, robotColour(l)]); joints.push(o);
      }
      const M = poseMat(p);
      for (const s of l.shapes || []) segs.push([o, apply(M, [s.pose[0], s.pose[1], s.pose[2]]), robotColour(l)]);
      // a link without collision shapes: a stick to its centre of mass,
      // marked by a ball
      if (l.com && !(l.shapes || []).length) {
        const c = apply(M, l.com);
        segs.push([o, c, robotColour(l)]); coms.push(c);
      }
    });
    return [segs, joints, coms];
  }

  // contacts: arrows scaled by a high quantile of the forces of the run
  // (an impact's peak would make resting forces invisible)
  const allF = [];
  for (const f of F) for (const c of f.contacts || []) { const n = norm(c.force); if (n > 0) allF.push(n); }
  allF.sort((a, b) => a - b);
  const fmax = allF.length ? allF[Math.floor(0.9 * (allF.length - 1))] : 0;
  const contactPts = gl.createBuffer();

  // ---------- camera ----------
  const cam = { az: -0.9, el: 0.4, dist: 1.3 * span + 0.3, target: centre.slice() };
  let drag = null;
  canvas.addEventListener('mousedown', e => { drag = { x: e.clientX, y: e.clientY, pan: e.shiftKey || e.button === 2 }; canvas.style.cursor = 'grabbing'; });
  window.addEventListener('mouseup', () => { drag = null; canvas.style.cursor = 'grab'; });
  canvas.addEventListener('contextmenu', e => e.preventDefault());
  window.addEventListener('mousemove', e => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    drag.x = e.clientX; drag.y = e.clientY;
    if (drag.pan) {
      const fwd = [Math.cos(cam.el) * Math.cos(cam.az), Math.cos(cam.el) * Math.sin(cam.az), Math.sin(cam.el)];
      const right = unit(cross([0, 0, 1], fwd)), up = cross(fwd, right);
      const s = cam.dist * 0.0015;
      cam.target = add(cam.target, add(scl(right, -dx * s), scl(up, dy * s)));
    } else {
      cam.az -= dx * 0.01;
      cam.el = Math.max(-1.5, Math.min(1.5, cam.el + dy * 0.01));
    }
    render();
  });
  canvas.addEventListener('wheel', e => { e.preventDefault(); cam.dist *= Math.exp(e.deltaY * 0.001); render(); }, { passive: false });

  // ---------- playback ----------
  const slider = document.getElementById('slider');
  slider.max = F.length - 1;
  let frame = 0, playing = true, simTime = 0, last = null;
  const playBtn = document.getElementById('play');
  playBtn.onclick = () => { playing = !playing; playBtn.textContent = playing ? 'pause' : 'play'; last = null; };
  slider.oninput = () => { frame = +slider.value; simTime = F[frame].t || 0; render(); };
  const showC = document.getElementById('showc');
  showC.onchange = () => render();
  const T0 = F[0].t || 0, T1 = F[F.length - 1].t || 0;
  const dt = TRAJ.dt || (F.length > 1 ? (T1 - T0) / (F.length - 1) : 1);
  // #t=SECONDS (or #frame=N) opens paused at that time
  const h = /(t|frame)=([0-9.eE+-]+)/.exec(location.hash || '');
  if (h) {
    const x = parseFloat(h[2]);
    frame = Math.max(0, Math.min(F.length - 1, h[1] === 't' ? Math.round((x - T0) / dt) : Math.round(x)));
    playing = false; playBtn.textContent = 'play';
  }
  simTime = F[frame].t || 0;

  // ---------- plots ----------
  function plot(id, label, unitStr, series) {
    const cv = document.getElementById(id), g = cv.getContext('2d'), W = cv.width, H = cv.height;
    const ml = 46, mr = 6, mt = 16, mb = 14;
    const ys = series.filter(v => typeof v === 'number' && isFinite(v));
    return function (k) {
      g.clearRect(0, 0, W, H);
      g.fillStyle = '#333'; g.font = '11px sans-serif';
      const v = series[k];
      g.fillText(label + (typeof v === 'number' ? ' = ' + (Math.abs(v) < 1e-3 && v !== 0 ? v.toExponential(2) : v.toFixed(3)) + unitStr : ''), 4, 11);
      if (!ys.length) { g.fillStyle = '#999'; g.fillText('no data in this trajectory', ml, H / 2); return; }
      let a = Math.min(...ys), b = Math.max(...ys);
      if (b - a < 1e-12 * Math.max(1, Math.abs(b))) { a -= 0.5 * Math.max(1e-9, Math.abs(a)); b += 0.5 * Math.max(1e-9, Math.abs(b)); }
      const sx = i => ml + (W - ml - mr) * i / Math.max(1, series.length - 1);
      const sy = y => mt + (H - mt - mb) * (1 - (y - a) / (b - a));
      g.fillStyle = '#666';
      g.fillText(b.toPrecision(3), 2, mt + 8); g.fillText(a.toPrecision(3), 2, H - mb);
      g.strokeStyle = '#ddd'; g.strokeRect(ml, mt, W - ml - mr, H - mt - mb);
      g.strokeStyle = '#2a6ebb'; g.beginPath();
      let pen = false;
      series.forEach((y, i) => {
        if (typeof y !== 'number' || !isFinite(y)) { pen = false; return; }
        if (pen) g.lineTo(sx(i), sy(y)); else g.moveTo(sx(i), sy(y));
        pen = true;
      });
      g.stroke();
      g.strokeStyle = '#d33'; g.beginPath(); g.moveTo(sx(k), mt); g.lineTo(sx(k), H - mb); g.stroke();
      g.fillStyle = '#666'; g.fillText('t = ' + (F[k].t || 0).toFixed(3) + ' s', W - 90, H - 2);
    };
  }
  const plots = [
    plot('p_energy', 'energy', ' J', F.map(f => f.energy)),
    plot('p_pen', 'max penetration', ' m', F.map(f => f.penetration)),
    plot('p_iter', 'solver iterations', '', F.map(f => f.iterations)),
  ];

  // ---------- drawing ----------
  function resize() {
    const r = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(canvas.clientWidth * r)), h2 = Math.max(1, Math.round(canvas.clientHeight * r));
    if (canvas.width !== w || canvas.height !== h2) { canvas.width = w; canvas.height = h2; }
  }
  function drawLines(buf, count, mode, color, size, model) {
    gl.useProgram(lineProg);
    gl.uniformMatrix4fv(U.lModel, false, model || ident());
    gl.uniform3fv(U.lColor, color); gl.uniform1f(U.lSize, size || 1);
    gl.bindBuffer(gl.ARRAY_BUFFER, buf);
    gl.disableVertexAttribArray(1);
    gl.enableVertexAttribArray(A.lPos);
    gl.vertexAttribPointer(A.lPos, 3, gl.FLOAT, false, 12, 0);
    gl.drawArrays(mode, 0, count);
  }
  function render() {
    resize();
    const k = frame;
    gl.viewport(0, 0, canvas.width, canvas.height);
    gl.clearColor(0.87, 0.89, 0.92, 1); gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
    gl.enable(gl.DEPTH_TEST);
    const eye = add(cam.target, scl([Math.cos(cam.el) * Math.cos(cam.az), Math.cos(cam.el) * Math.sin(cam.az), Math.sin(cam.el)], cam.dist));
    const vp = mul(perspective(0.8, canvas.width / canvas.height, cam.dist * 0.01, cam.dist * 20), lookAt(eye, cam.target, [0, 0, 1]));
    gl.useProgram(lineProg); gl.uniformMatrix4fv(U.lVP, false, vp);
    gl.useProgram(meshProg); gl.uniformMatrix4fv(U.mVP, false, vp);
    // ground fill (pushed back so the grid lines stay visible)
    gl.enable(gl.POLYGON_OFFSET_FILL); gl.polygonOffset(1, 1);
    gl.uniformMatrix4fv(U.mModel, false, ident()); gl.uniform3fv(U.mColor, [0.78, 0.8, 0.78]);
    gl.bindBuffer(gl.ARRAY_BUFFER, fillBuf);
    gl.enableVertexAttribArray(A.mPos); gl.enableVertexAttribArray(A.mNrm);
    gl.vertexAttribPointer(A.mPos, 3, gl.FLOAT, false, 24, 0); gl.vertexAttribPointer(A.mNrm, 3, gl.FLOAT, false, 24, 12);
    gl.drawArrays(gl.TRIANGLES, 0, fillCount);
    gl.disable(gl.POLYGON_OFFSET_FILL);
    drawLines(gridBuf, gridCount, gl.LINES, [0.55, 0.57, 0.55]);
    for (const it of items) {
      const fm = it.frame(k);
      if (!fm) continue;
      const model = mul(fm, it.local);
      if (it.kind === 'tris') {
        gl.useProgram(meshProg);
        gl.uniformMatrix4fv(U.mModel, false, model); gl.uniform3fv(U.mColor, it.color);
        gl.bindBuffer(gl.ARRAY_BUFFER, it.buf);
        gl.enableVertexAttribArray(A.mPos); gl.enableVertexAttribArray(A.mNrm);
        gl.vertexAttribPointer(A.mPos, 3, gl.FLOAT, false, 24, 0); gl.vertexAttribPointer(A.mNrm, 3, gl.FLOAT, false, 24, 12);
        gl.drawArrays(gl.TRIANGLES, 0, it.count);
      } else {
        drawLines(it.buf, it.count, gl.POINTS, it.color, 4, model);
      }
    }
    function solid(buf, count, model, color) {
      gl.useProgram(meshProg);
      gl.uniformMatrix4fv(U.mModel, false, model); gl.uniform3fv(U.mColor, color);
      gl.bindBuffer(gl.ARRAY_BUFFER, buf);
      gl.enableVertexAttribArray(A.mPos); gl.enableVertexAttribArray(A.mNrm);
      gl.vertexAttribPointer(A.mPos, 3, gl.FLOAT, false, 24, 0); gl.vertexAttribPointer(A.mNrm, 3, gl.FLOAT, false, 24, 12);
      gl.drawArrays(gl.TRIANGLES, 0, count);
    }
    const sk = skeleton(k);
    for (const [a, b, c] of sk[0]) { const m = segMat(a, b, stickR); if (m) solid(stick.buf, stick.count, m, c); }
    for (const p of sk[1]) solid(ball.buf, ball.count, ballMat(p, 1.7 * stickR), [0.25, 0.25, 0.3]);
    for (const p of sk[2]) solid(ball.buf, ball.count, ballMat(p, 3 * stickR), [0.85, 0.6, 0.1]);
    const cs = F[k].contacts || [];
    if (showC.checked && cs.length) {
      const P = [];
      gl.disable(gl.DEPTH_TEST); // forces stay visible through the bodies
      for (const c of cs) {
        const f = c.force, fn = norm(f);
        P.push(c.point[0], c.point[1], c.point[2]);
        if (!(fmax > 0) || !(fn > 0)) continue;
        // length ~ sqrt(force): small forces stay visible; capped
        const len = Math.min(0.4 * span * Math.sqrt(fn / fmax), 0.6 * span);
        const d = scl(f, 1 / fn), tip = add(c.point, scl(d, len)), neck = add(c.point, scl(d, 0.75 * len));
        const r = Math.max(0.6 * stickR, 0.03 * len);
        const m1 = segMat(c.point, neck, r), m2 = segMat(neck, tip, 3 * r);
        if (m1) solid(stick.buf, stick.count, m1, [0.1, 0.7, 0.2]);
        if (m2) solid(head.buf, head.count, m2, [0.1, 0.7, 0.2]);
      }
      gl.bindBuffer(gl.ARRAY_BUFFER, contactPts); gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(P), gl.DYNAMIC_DRAW);
      drawLines(contactPts, P.length / 3, gl.POINTS, [0.95, 0.75, 0.0], 6);
      gl.enable(gl.DEPTH_TEST);
    }
    slider.value = k;
    document.getElementById('time').textContent = 't = ' + (F[k].t || 0).toFixed(3) + ' s  (frame ' + k + ' / ' + (F.length - 1) + ')';
    const info = [TRAJ.solver ? 'solver: ' + TRAJ.solver : '', cs.length ? cs.length + ' contact(s)' : (F[k].contacts ? 'no contact' : '')];
    for (const r of F[k].robots || []) info.push(r.name + ': q = [' + r.q.map(v => v.toFixed(3)).join(', ') + ']');
    document.getElementById('info').textContent = info.filter(x => x).join('\n');
    for (const p of plots) p(k);
    const err = gl.getError();
    if (err !== gl.NO_ERROR) throw new Error('WebGL error ' + err);
  }
  function tick(now) {
    if (playing && last !== null) {
      const speed = parseFloat(document.getElementById('speed').value) || 1;
      simTime += (now - last) / 1000 * speed;
      if (simTime > T1) simTime = T0;
      const k = Math.max(0, Math.min(F.length - 1, Math.round((simTime - T0) / dt)));
      if (k !== frame) { frame = k; render(); }
    }
    last = now;
    requestAnimationFrame(tick);
  }
  window.addEventListener('resize', render);
  render();
  setStatus('ok');
  requestAnimationFrame(tick);
})();
