use dualsim::kernel;

#[kernel]
fn twice<T: dualsim::Scalar>(x: T) -> T {
    let mut y = x;
    y = y + x;
    y
}

fn main() {}
