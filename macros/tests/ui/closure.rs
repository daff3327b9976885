use dualsim::kernel;

#[kernel]
fn square<T: dualsim::Scalar>(x: T) -> T {
    let f = |a: T| a * a;
    f(x)
}

fn main() {}
