fn main() {
    let a: Vec<String> = std::env::args().collect();
    let f = clawhdf5_format::H5File::open(std::path::Path::new(&a[1])).unwrap();
    let addr = f.resolve(&a[2]).unwrap();
    for m in f.debug_messages(addr).unwrap() {
        println!("{m}");
    }
}
