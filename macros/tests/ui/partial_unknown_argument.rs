// `partial(...)` names an argument the kernel does not have.
use dualsim::kernel;

#[kernel(partial(x, z))]
fn f<T: dualsim::Scalar>(x: [T; 2], y: T) -> T {
    x[0] * x[1] + y
}

fn main() {}
