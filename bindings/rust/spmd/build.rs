//! Passes spmd-sys's rpath (DEP_SPMD_RPATH, see spmd-sys/build.rs) on to this
//! crate's own tests and examples: Cargo applies a build script's link
//! arguments only to the package that printed them.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_SPMD_RPATH");
    if let Ok(rpath) = std::env::var("DEP_SPMD_RPATH") {
        for dir in rpath.split(':').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}
