//! Links libspmd. Where it is comes from, in order:
//!
//! 1. `SPMD_LIB_DIR`: the directory holding libspmd.so (or .dylib, .a);
//! 2. `pkg-config --libs spmd` (the program named by `PKG_CONFIG`, default
//!    `pkg-config`; `PKG_CONFIG_PATH` as usual: a libspmd build tree has one
//!    in `<build>/bindings/pkgconfig`);
//! 3. neither: `-lspmd` from the linker's default directories, with a warning.
//!
//! Directories not in the system's default search path get an rpath, so
//! binaries run from a build tree without LD_LIBRARY_PATH. Cargo applies an
//! rpath only to this package's own targets: it is also passed on as the
//! `links` metadata `DEP_SPMD_RPATH`, which the `spmd` crate's build script
//! turns into link arguments for its tests and examples.
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for var in ["SPMD_LIB_DIR", "PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let mut search: Vec<String> = Vec::new();
    let mut libs: Vec<String> = Vec::new();
    let mut rpaths: Vec<String> = Vec::new();

    if let Some(dir) = env::var_os("SPMD_LIB_DIR").filter(|d| !d.is_empty()) {
        let dir = dir.to_string_lossy().into_owned();
        search.push(dir.clone());
        rpaths.push(dir);
    } else if let Some(flags) = pkg_config_libs() {
        for flag in flags.split_whitespace() {
            if let Some(dir) = flag.strip_prefix("-L") {
                search.push(dir.to_string());
            } else if let Some(lib) = flag.strip_prefix("-l") {
                libs.push(lib.to_string());
            } else if let Some(rest) = flag.strip_prefix("-Wl,") {
                // -Wl,-rpath,DIR or -Wl,-rpath=DIR
                let mut parts = rest.split(',');
                while let Some(part) = parts.next() {
                    if part == "-rpath" {
                        rpaths.extend(parts.next().map(str::to_string));
                    } else if let Some(dir) = part.strip_prefix("-rpath=") {
                        rpaths.push(dir.to_string());
                    }
                }
            }
        }
    } else {
        println!(
            "cargo:warning=libspmd not found through SPMD_LIB_DIR or pkg-config (spmd.pc); \
             linking -lspmd from the default directories"
        );
    }
    if libs.is_empty() {
        libs.push("spmd".to_string());
    }

    for dir in &search {
        println!("cargo:rustc-link-search=native={dir}");
    }
    for lib in &libs {
        println!("cargo:rustc-link-lib={lib}");
    }
    let unix = env::var("CARGO_CFG_UNIX").is_ok();
    if unix {
        for dir in &rpaths {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
    // DEP_SPMD_RPATH for the build scripts of crates that depend on this one.
    println!("cargo:rpath={}", if unix { rpaths.join(":") } else { String::new() });
}

fn pkg_config_libs() -> Option<String> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output = Command::new(program).args(["--libs", "spmd"]).output().ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8(output.stdout).ok()
}
