use super::*;

pub(super) struct Meas {
    pub(super) eq: f64,
    pub(super) comp_dev: f64,
    pub(super) comp_max: f64,
    pub(super) merit: f64,
}

/// Measures of `r_0` (κ = 0 residual) at target κ.
pub(super) fn measures<T: Scalar>(isl: &Isl<T>, r0: &DVec<T>, u: &DVec<T>, kappa: f64) -> Meas {
    let mut r: Vec<f64> = r0.iter().map(|x| x.re()).collect();
    for c in &isl.cones {
        r[c.row] -= kappa;
    }
    let (mut eq, mut comp_dev, mut merit) = (0.0_f64, 0.0_f64, 0.0);
    for (i, ri) in r.iter().enumerate() {
        merit += ri * ri;
        if isl.equality[i] {
            eq = eq.max(ri.abs());
        } else {
            comp_dev = comp_dev.max(ri.abs());
        }
    }
    let mut comp_max: f64 = 0.0;
    for c in &isl.cones {
        let d: f64 = (0..c.dim).map(|i| u[c.z + i].re() * u[c.s + i].re()).sum();
        comp_max = comp_max.max(d);
    }
    Meas {
        eq,
        comp_dev,
        comp_max,
        merit,
    }
}

pub(super) fn mean_comp<T: Scalar>(
    isl: &Isl<T>,
    u: &DVec<T>,
    du: Option<(&DVec<f64>, f64)>,
) -> f64 {
    let val = |i: usize| {
        let mut v = u[i].re();
        if let Some((d, a)) = du {
            v += a * d[i];
        }
        v
    };
    let mut sum = 0.0;
    for c in &isl.cones {
        sum += (0..c.dim).map(|i| val(c.z + i) * val(c.s + i)).sum::<f64>();
    }
    sum / isl.degree().max(1) as f64
}

pub(super) fn boundary_step<T: Scalar>(isl: &Isl<T>, u: &DVec<T>, du: &DVec<f64>) -> f64 {
    let mut a = f64::INFINITY;
    for c in &isl.cones {
        for base in [c.z, c.s] {
            if c.dim == 1 {
                a = a.min(orthant_step(u[base].re(), du[base]));
            } else {
                let lay = ConeLayout {
                    n_orthant: 0,
                    soc: vec![c.dim],
                };
                let x = DVec::from_fn(c.dim, |i, _| u[base + i].re());
                let d = DVec::from_fn(c.dim, |i, _| du[base + i]);
                a = a.min(lay.max_step(&x, &d));
            }
        }
    }
    a
}
