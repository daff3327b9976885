use dualsim::kernel;

// Only `jacobian`, `inline` and `partial(args)` are `#[kernel]` arguments.
#[kernel(hessian)]
fn f<T: dualsim::Scalar>(x: T) -> T {
    x * x
}

fn main() {}
