//! Links libspmd: the static library libspmd.a by default, so that the
//! programs of any crate depending on this one run without LD_LIBRARY_PATH;
//! the shared library libspmd.so with the `shared` feature or
//! `SPMD_LINK=shared`.
//!
//! Where libspmd is comes from, in order:
//!
//! 1. `SPMD_LIB_DIR`: the directory holding libspmd.a and libspmd.so;
//! 2. `pkg-config --libs spmd` (`--static --libs` for the static library;
//!    the program named by `PKG_CONFIG`, default `pkg-config`;
//!    `PKG_CONFIG_PATH` as usual: a libspmd build tree has one in
//!    `<build>/bindings/pkgconfig`);
//! 3. neither: `-lspmd` (shared) from the linker's default directories, with
//!    a warning.
//!
//! The static library needs libspmd's own dependencies too (OpenBLAS,
//! SLEEF, the C++ runtime, libm, libpthread, libdl): spmd.pc names them
//! (Requires.private, Libs.private); with `SPMD_LIB_DIR` they are asked of
//! pkg-config by name (openblas, sleef). Link libraries, unlike link
//! arguments, reach the programs of every crate that depends on this one.
//!
//! `SPMD_LINK`: `static` (libspmd.a, an error when there is none), `shared`
//! (libspmd.so), unset: libspmd.a when it is found, else libspmd.so with a
//! warning.
//!
//! Directories not in the system's default search path get an rpath (the
//! directory of `SPMD_LIB_DIR`, or a `-Wl,-rpath` of spmd.pc): for libspmd.so
//! and, either way, for the platform plugins (libspmd_cuda.so,
//! libspmd_mpi.so) found next to it. Cargo applies an rpath only to this
//! package's own targets: it is also passed on as the `links` metadata
//! `DEP_SPMD_RPATH`, which the `spmd` crate's build script turns into link
//! arguments for its tests and examples.
use std::env;
use std::path::Path;
use std::process::Command;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    Static,
    Shared,
}

/// What the linker needs: search directories, libspmd's private
/// dependencies (for the static library), rpath directories.
#[derive(Default)]
struct Found {
    search: Vec<String>,
    deps: Vec<String>,
    rpaths: Vec<String>,
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for var in ["SPMD_LIB_DIR", "SPMD_LINK", "PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR"] {
        println!("cargo:rerun-if-env-changed={}", var);
    }
    let asked = asked_link();
    let lib_dir = env::var("SPMD_LIB_DIR").ok().filter(|d| !d.is_empty());

    let found = if let Some(dir) = &lib_dir {
        Some(Found {
            search: vec![dir.clone()],
            deps: if asked == Some(Link::Shared) { Vec::new() } else { default_deps() },
            rpaths: vec![dir.clone()],
        })
    } else {
        // Without a module of Requires.private, --static fails: then the
        // plain flags, and the dependencies by name.
        pkg_config(&["--static", "--libs", "spmd"])
            .or_else(|| pkg_config(&["--libs", "spmd"]))
            .map(|flags| parse_flags(&flags))
            .map(|mut f| {
                if f.deps.iter().all(|l| l == "spmd") && asked != Some(Link::Shared) {
                    f.deps = default_deps();
                }
                f
            })
    };

    let link = match (&found, asked) {
        (None, _) => {
            println!(
                "cargo:warning=libspmd not found through SPMD_LIB_DIR or pkg-config (spmd.pc); \
                 linking -lspmd from the default directories"
            );
            Link::Shared
        }
        (Some(_), Some(Link::Shared)) => Link::Shared,
        (Some(f), asked) => {
            let has_static = f.search.iter().any(|d| Path::new(d).join("libspmd.a").is_file());
            match (has_static, asked) {
                (true, _) => Link::Static,
                (false, Some(Link::Static)) => {
                    panic!("SPMD_LINK=static: no libspmd.a in {:?}", f.search);
                }
                (false, _) => {
                    println!(
                        "cargo:warning=no libspmd.a in {:?} (libspmd's CMake target spmd_static makes it): \
                         linking libspmd.so, which programs find through an rpath or LD_LIBRARY_PATH",
                        f.search
                    );
                    Link::Shared
                }
            }
        }
    };

    let found = found.unwrap_or_default();
    for dir in &found.search {
        println!("cargo:rustc-link-search=native={}", dir);
        // A rebuilt libspmd.a must be linked again: Cargo watches only what
        // it is told to.
        let library = Path::new(dir).join(if link == Link::Static { "libspmd.a" } else { "libspmd.so" });
        if library.is_file() {
            println!("cargo:rerun-if-changed={}", library.display());
        }
    }
    match link {
        Link::Static => {
            println!("cargo:rustc-link-lib=static=spmd");
            for lib in found.deps.iter().filter(|l| l.as_str() != "spmd") {
                println!("cargo:rustc-link-lib={}", lib);
            }
        }
        Link::Shared => println!("cargo:rustc-link-lib=spmd"),
    }
    let unix = env::var("CARGO_CFG_UNIX").is_ok();
    if unix {
        for dir in &found.rpaths {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
        }
    }
    // DEP_SPMD_RPATH and DEP_SPMD_LINK for the build scripts of crates that
    // depend on this one.
    println!("cargo:rpath={}", if unix { found.rpaths.join(":") } else { String::new() });
    println!("cargo:link={}", if link == Link::Static { "static" } else { "shared" });
}

/// The kind of library asked for: the `shared` feature, or `SPMD_LINK`.
fn asked_link() -> Option<Link> {
    if env::var_os("CARGO_FEATURE_SHARED").is_some() {
        return Some(Link::Shared);
    }
    match env::var("SPMD_LINK").unwrap_or_default().as_str() {
        "" => None,
        "static" => Some(Link::Static),
        "shared" | "dynamic" => Some(Link::Shared),
        other => panic!("SPMD_LINK={:?}: expected \"static\" or \"shared\"", other),
    }
}

/// libspmd.a's dependencies when no spmd.pc names them: OpenBLAS and SLEEF
/// as pkg-config knows them (else by name), oneDNN where it is installed
/// (a build that found it runs its float32 products through it), then the
/// C++ runtime, libm, libpthread and libdl.
fn default_deps() -> Vec<String> {
    let mut deps = match pkg_config(&["--libs", "openblas", "sleef"]) {
        Some(flags) => parse_flags(&flags).deps,
        None => vec!["openblas".to_string(), "sleef".to_string()],
    };
    let lib_dirs =
        ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"];
    if lib_dirs.iter().any(|d| Path::new(d).join("libdnnl.so").exists()) {
        deps.push("dnnl".to_string());
    }
    deps.extend(["stdc++", "m", "pthread", "dl"].iter().map(|s| s.to_string()));
    deps
}

/// The -L, -l and -Wl,-rpath parts of pkg-config's output.
fn parse_flags(flags: &str) -> Found {
    let mut found = Found::default();
    for flag in flags.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            found.search.push(dir.to_string());
        } else if let Some(lib) = flag.strip_prefix("-l") {
            if !found.deps.iter().any(|l| l == lib) {
                found.deps.push(lib.to_string());
            }
        } else if let Some(rest) = flag.strip_prefix("-Wl,") {
            // -Wl,-rpath,DIR or -Wl,-rpath=DIR
            let mut parts = rest.split(',');
            while let Some(part) = parts.next() {
                if part == "-rpath" {
                    found.rpaths.extend(parts.next().map(str::to_string));
                } else if let Some(dir) = part.strip_prefix("-rpath=") {
                    found.rpaths.push(dir.to_string());
                }
            }
        }
    }
    found
}

fn pkg_config(args: &[&str]) -> Option<String> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output = Command::new(program).args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8(output.stdout).ok()
}
