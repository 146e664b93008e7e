//! Build script: records the tokio version from Cargo.lock (for `rtlab run --runtime tokio`
//! results), and links a release binary for a small resident footprint: its code in the order a
//! plain run executes it, its relocations packed; compiles `rtlab watch`'s BPF programs when
//! clang is there.

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
    release_link();
    bpf_programs();
}

/// Compiles bpf/watch.bpf.c into `$OUT_DIR/watch.bpf.o` with clang (`-target bpfel`, CO-RE
/// relocations from `-g`) and sets `cfg(rtlab_bpf)`; without clang (or with `RTLAB_BPF=off`)
/// rtlab is built without the BPF backend, and says so here and when `watch` runs.
fn bpf_programs() {
    const SOURCE: &str = "bpf/watch.bpf.c";
    println!("cargo:rustc-check-cfg=cfg(rtlab_bpf)");
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-env-changed=RTLAB_BPF");
    println!("cargo:rerun-if-env-changed=CLANG");
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let arch = match env("CARGO_CFG_TARGET_ARCH").as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        _ => return,
    };
    if env("RTLAB_BPF") == "off" {
        return;
    }
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let out = std::path::Path::new(&env("OUT_DIR")).join("watch.bpf.o");
    // The object's debug information (which carries its BTF) names the compilation directory
    // as `.`, not the clone's path: the object is byte for byte the same wherever rtlab is
    // built, and so is the release binary's unit that embeds it, whose promoted functions the
    // link order names by that unit's hash (BENCHMARKS.md, section 34).
    let status = std::process::Command::new(&clang)
        .args(["-O2", "-g", "-fdebug-compilation-dir=.", "-target", "bpfel", "-Wall", "-Werror"])
        .arg(format!("-D__TARGET_ARCH_{arch}"))
        .args(["-c", SOURCE, "-o"])
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => println!("cargo:rustc-cfg=rtlab_bpf"),
        Ok(s) => panic!("{clang} could not compile {SOURCE} ({s}); set RTLAB_BPF=off to build without it"),
        Err(e) => println!(
            "cargo:warning={clang} not found ({e}): rtlab is built without watch's BPF backend (apt-get install clang)"
        ),
    }
}

/// This machine's C library is glibc `major.minor` or later (`getconf GNU_LIBC_VERSION`).
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let out = std::process::Command::new("getconf").arg("GNU_LIBC_VERSION").output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let version = text.trim().strip_prefix("glibc ").unwrap_or("");
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
}

/// The release binary's functions that a plain run executes are linked side by side, in the
/// order recorded in link/plain-run.order (scripts/order-file.sh): the kernel maps code 64 KiB
/// around each fault, so scattered, they keep most of the binary resident (BENCHMARKS.md,
/// section 16); and its relative relocations are packed. The order is recorded from the
/// README's static build (`crt-static`: the C library's functions are in it too, sections 25
/// and 26); a dynamic release build finds only part of it (its symbols' hashes differ). Only where rustc links with lld (its
/// default on x86_64 Linux); `RTLAB_LINK_ORDER=off` links without either. Symbols missing from
/// the file are linked where they fall.
fn release_link() {
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
    // Relative relocations packed (DT_RELR, glibc 2.36 and later): the loader reads 10 KiB at
    // start instead of 380 KiB of Elf64_Rela, every page of which stayed resident.
    if glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let path = std::path::Path::new(&env("CARGO_MANIFEST_DIR")).join(ORDER);
    // The linker driver splits -Wl's argument at commas.
    if path.is_file() && !path.to_string_lossy().contains(',') {
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", path.display());
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
