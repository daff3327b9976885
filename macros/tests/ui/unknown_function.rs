use dualsim::kernel;

#[kernel]
fn slope<T: dualsim::Scalar>(x: T) -> T {
    let s = x.sin();
    s * x.tan()
}

fn main() {}
