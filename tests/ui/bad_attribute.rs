use dualsim::kernel;

// Only `#[kernel]`, `#[kernel(jacobian)]`, `#[kernel(inline)]` and `#[kernel(jacobian, inline)]` exist.
#[kernel(hessian)]
fn f<T: dualsim::Scalar>(x: T) -> T {
    x * x
}

fn main() {}
