use dualsim::kernel;

// A `#[kernel(jacobian)]` kernel has no `_hessian` sibling, so a full
// kernel cannot call it.
#[kernel(jacobian)]
fn g<T: dualsim::Scalar>(x: T) -> T {
    x * x
}

#[kernel]
fn h<T: dualsim::Scalar>(x: T) -> T {
    g(x) + x
}

fn main() {}
