use dualsim::kernel;

// Only `#[kernel]` and `#[kernel(jacobian)]` exist.
#[kernel(hessian)]
fn f<T: dualsim::Scalar>(x: T) -> T {
    x * x
}

fn main() {}
