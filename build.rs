//! Build script: records the tokio version from Cargo.lock (for `rtlab run --runtime tokio`
//! results), and links a release binary in the order a plain run executes its code.

fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"tokio\"\n"))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"').to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=RTLAB_TOKIO_VERSION={version}");
    link_order();
}

/// The release binary's functions that a plain run executes are linked side by side, in the
/// order recorded in link/plain-run.order (scripts/order-file.sh): the kernel maps code 64 KiB
/// around each fault, so scattered, they keep most of the binary resident (BENCHMARKS.md,
/// section 16). Only where rustc links with lld, which reads the order (its default on x86_64
/// Linux); `RTLAB_LINK_ORDER=off` links without it. Symbols missing from the file are linked
/// where they fall.
fn link_order() {
    const ORDER: &str = "link/plain-run.order";
    println!("cargo:rerun-if-changed={ORDER}");
    println!("cargo:rerun-if-env-changed=RTLAB_LINK_ORDER");
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let flags = env("CARGO_ENCODED_RUSTFLAGS");
    let other_linker = ["linker", "fuse-ld", "link-self-contained"].iter().any(|f| flags.contains(f))
        || std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some();
    let wanted = env("PROFILE") == "release" && env("TARGET") == "x86_64-unknown-linux-gnu";
    if !wanted || other_linker || env("RTLAB_LINK_ORDER") == "off" {
        return;
    }
    let path = std::path::Path::new(&env("CARGO_MANIFEST_DIR")).join(ORDER);
    // The linker driver splits -Wl's argument at commas.
    if path.is_file() && !path.to_string_lossy().contains(',') {
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", path.display());
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
