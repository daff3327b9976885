//! The checks of a scene once every body, static and robot is read: a
//! restitution the backend does not implement, bodies that start
//! interpenetrating, and every remaining check of the library, each
//! located at the item it names.

use crate::sim::{State, World};

use super::fields::{Cx, R};
use super::{INITIAL_PENETRATION_TOLERANCE, Located, locate};

/// Refuses the scene's world at its initial state if it cannot be
/// simulated as written (located through `located` and `restitutions`).
pub(super) fn check_initial(
    cx: &Cx,
    world: &World<f64>,
    initial: &State<f64>,
    located: &[Located],
    restitutions: &[Located],
    allow_initial_penetration: bool,
) -> R<()> {
    // Options the backend does not implement, found only once every body is known.
    let elastic = world.solver.supports(crate::contact::Feature::Restitution);
    if let Some((a, b, _)) = world.restitution_pair().filter(|_| !elastic) {
        let e = world
            .check_supported()
            .expect_err("a restitution pair is unsupported");
        let at = locate(restitutions, &a).or_else(|| locate(restitutions, &b));
        let (span, path) = at
            .map(|l| (l.span.clone(), l.path.clone()))
            .unwrap_or((0..0, String::new()));
        return Err(cx.error(span, &path, e.to_string()));
    }
    // Bodies that start inside each other.
    if !allow_initial_penetration {
        let g = crate::sim::penetration::gaps(world, initial, -INITIAL_PENETRATION_TOLERANCE);
        if let Some(d) = g.deepest() {
            let robot = d.a.split('/').next().unwrap_or(&d.a);
            let at = locate(located, &d.a).or_else(|| locate(located, robot));
            let (span, path) = at
                .map(|l| (l.span.clone(), l.path.clone()))
                .unwrap_or((0..0, String::new()));
            return Err(cx.error(
                span,
                &path,
                format!(
                    "`{}` and `{}` interpenetrate by {:e} m at the initial state (tolerance {:e} m): \
                     move them apart, or set `[sim] allow_initial_penetration = true` to start \
                     from this state (the solver then pushes them apart)",
                    d.a, d.b, -d.gap, INITIAL_PENETRATION_TOLERANCE
                ),
            ));
        }
    }
    // Every remaining check of the library (a backstop: the checks above
    // already locate what they find).
    world.validate(initial).map_err(|e| {
        let msg = e.to_string();
        // locate at the first body, static or robot the message names
        let named = msg.split('`').nth(1).unwrap_or("");
        let robot = named.split('/').next().unwrap_or(named);
        match locate(located, named).or_else(|| locate(located, robot)) {
            Some(l) => cx.error(l.span.clone(), &l.path, msg),
            None => cx.error(0..0, "", msg),
        }
    })?;
    Ok(())
}
