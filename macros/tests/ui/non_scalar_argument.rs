use dualsim::kernel;

#[kernel]
fn scale<T: dualsim::Scalar>(x: T, k: f64) -> T {
    x * k
}

fn main() {}
