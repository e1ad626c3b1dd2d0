use std::time::Instant;
fn main() {
    let src = std::fs::read_to_string("/tmp/big.chat").unwrap();
    let n = 10;
    let t = Instant::now();
    for _ in 0..n { let d = wield_chat::parse(&src); std::hint::black_box(&d); }
    let p = t.elapsed() / n;
    let d = wield_chat::parse(&src);
    let t = Instant::now();
    for _ in 0..n { std::hint::black_box(d.write()); }
    println!("{} bytes, wall parse {:?} write {:?}", src.len(), p, t.elapsed() / n);
}
