//! `cargo xtask test`: the whole test suite on a fresh machine, by itself.
//!
//! The tests need more than cargo: cargo-nextest runs them, Chromium and
//! chromedriver drive the console's browser tests, LibreOffice Calc writes
//! the spreadsheets the format tests read, and PostgreSQL and MariaDB are
//! the second and third backends. This finds each, installs what is
//! missing (Debian packages as root, cargo-nextest from crates.io), starts
//! a local server that is down, or stops before any test runs saying
//! exactly what to install. Then it runs the suite on SQLite, PostgreSQL
//! and MariaDB (a fresh database per test on each server), and removes the
//! test databases.
//!
//! `cargo xtask test [--sqlite-only] [--backends sqlite,postgres,mysql]
//! [-- <nextest arguments>]`

use std::env;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

/// The PostgreSQL server the suite's second run is against.
const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432";

/// The MariaDB (or MySQL) server of the third run.
const DEFAULT_MY: &str = "mysql://root@127.0.0.1:3306";

/// A program the tests need, and the Debian package that brings it.
struct Need {
    program: &'static str,
    package: &'static str,
    why: &'static str,
}

const NEEDS: &[Need] = &[
    Need {
        program: "chromium",
        package: "chromium",
        why: "the console's browser tests",
    },
    Need {
        program: "chromedriver",
        package: "chromium-driver",
        why: "the browser tests drive Chromium through it",
    },
    Need {
        program: "soffice",
        package: "libreoffice-calc-nogui",
        why: "the format tests convert the data set to XLS and LibreOffice's XLSX",
    },
    Need {
        program: "curl",
        package: "curl",
        why: "the demo's printed API commands are run as a newcomer pastes them",
    },
    Need {
        program: "node",
        package: "nodejs",
        why: "the sign-in tests run a real OpenID provider (tests/oidc)",
    },
    Need {
        program: "npm",
        package: "npm",
        why: "installing the test OpenID provider from the npm registry",
    },
    Need {
        program: "psql",
        package: "postgresql-client",
        why: "creating and dropping the PostgreSQL test databases",
    },
    Need {
        program: "mariadb",
        package: "mariadb-client",
        why: "dropping the MariaDB test databases",
    },
];

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => match test(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(why) => {
                eprintln!("xtask test: {why}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!(
                "usage: cargo xtask test [--sqlite-only] [--backends sqlite,postgres,mysql] \
                 [-- <nextest arguments>]"
            );
            ExitCode::from(2)
        }
    }
}

/// A database the suite runs on.
#[derive(Clone, Copy, PartialEq)]
enum Backend {
    Sqlite,
    Postgres,
    Mysql,
}

/// The backends asked for: all three, `--sqlite-only`, or `--backends`
/// (`sqlite,postgres`, `mysql`, …).
fn backends(args: &[String]) -> Result<Vec<Backend>, String> {
    if args.iter().any(|a| a == "--sqlite-only") {
        return Ok(vec![Backend::Sqlite]);
    }
    let Some(at) = args.iter().position(|a| a == "--backends") else {
        return Ok(vec![Backend::Sqlite, Backend::Postgres, Backend::Mysql]);
    };
    let list = args.get(at + 1).ok_or("--backends needs a list")?;
    list.split(',')
        .map(|b| match b.trim() {
            "sqlite" => Ok(Backend::Sqlite),
            "postgres" => Ok(Backend::Postgres),
            "mysql" | "mariadb" => Ok(Backend::Mysql),
            other => Err(format!(
                "unknown backend {other:?} (sqlite, postgres, mysql)"
            )),
        })
        .collect()
}

fn test(args: &[String]) -> Result<(), String> {
    let backends = backends(args)?;
    let nextest_args: Vec<&str> = args
        .iter()
        .skip_while(|a| *a != "--")
        .skip(1)
        .map(String::as_str)
        .collect();
    ensure_nextest()?;
    ensure_programs()?;
    ensure_oidc_provider()?;
    let pg = env::var("IMPORTGATE_TEST_POSTGRES_SERVER").unwrap_or_else(|_| DEFAULT_PG.into());
    let my = env::var("IMPORTGATE_TEST_MYSQL_SERVER").unwrap_or_else(|_| DEFAULT_MY.into());
    if backends.contains(&Backend::Postgres) {
        ensure_postgres(&pg)?;
        drop_test_databases(&pg);
    }
    if backends.contains(&Backend::Mysql) {
        ensure_mysql(&my)?;
        drop_mysql_test_databases(&my);
    }
    for backend in backends {
        match backend {
            Backend::Sqlite => {
                step("tests on SQLite");
                run_nextest(&nextest_args, None)?;
            }
            Backend::Postgres => {
                step("tests on PostgreSQL (a fresh database per test)");
                let result = run_nextest(&nextest_args, Some(("IMPORTGATE_TEST_POSTGRES", &pg)));
                if result.is_err() {
                    show_server_state();
                }
                drop_test_databases(&pg);
                result?;
            }
            Backend::Mysql => {
                step("tests on MariaDB (a fresh database per test)");
                let result = run_nextest(&nextest_args, Some(("IMPORTGATE_TEST_MYSQL", &my)));
                drop_mysql_test_databases(&my);
                result?;
            }
        }
    }
    Ok(())
}

fn step(what: &str) {
    println!("== {what}");
}

/// Whether a program is on the PATH.
fn found(program: &str) -> bool {
    env::var_os("PATH")
        .is_some_and(|paths| env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Runs a command to its end; its success.
fn ok(cmd: &mut Command) -> bool {
    cmd.status().is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn ensure_nextest() -> Result<(), String> {
    let have = Command::new("cargo")
        .args(["nextest", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if have {
        return Ok(());
    }
    step("installing cargo-nextest (crates.io)");
    if ok(Command::new("cargo").args(["install", "cargo-nextest", "--locked"])) {
        Ok(())
    } else {
        Err("cargo-nextest is missing and `cargo install cargo-nextest --locked` failed; install it, then run again".into())
    }
}

/// Installs the test OpenID provider (`oidc-provider` from npm, locked
/// by tests/oidc/package-lock.json) unless it is there.
fn ensure_oidc_provider() -> Result<(), String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/oidc");
    if dir
        .join("node_modules/oidc-provider/package.json")
        .is_file()
    {
        return Ok(());
    }
    step("installing the test OpenID provider (npm ci --prefix tests/oidc)");
    if ok(Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir))
    {
        Ok(())
    } else {
        Err("`npm ci --prefix tests/oidc` failed; the sign-in tests need it".into())
    }
}

/// Installs the Debian packages of missing programs (as root, with apt),
/// or says exactly which to install.
fn ensure_programs() -> Result<(), String> {
    let missing: Vec<&Need> = NEEDS.iter().filter(|n| !found(n.program)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let packages: Vec<&str> = missing.iter().map(|n| n.package).collect();
    let list = missing
        .iter()
        .map(|n| format!("  {} ({}: {})", n.program, n.package, n.why))
        .collect::<Vec<_>>()
        .join("\n");
    if !(is_root() && found("apt-get")) {
        return Err(format!(
            "the tests need these programs, which are not installed:\n{list}\n\
             install them first: sudo apt-get install -y {}",
            packages.join(" ")
        ));
    }
    step(&format!(
        "installing {} (Debian packages)",
        packages.join(", ")
    ));
    let apt = |args: &[&str]| {
        ok(Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive"))
    };
    let mut install = vec!["install", "-y", "-q", "--no-install-recommends"];
    install.extend(&packages);
    if !apt(&["update", "-q"]) || !apt(&install) {
        return Err(format!(
            "apt-get could not install {}; the tests need:\n{list}",
            packages.join(" ")
        ));
    }
    let still: Vec<&str> = missing
        .iter()
        .filter(|n| !found(n.program))
        .map(|n| n.program)
        .collect();
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "still not found after installing: {}",
            still.join(", ")
        ))
    }
}

/// Host and port of a `postgres://user@host:port` URL.
fn host_port(url: &str) -> (String, String) {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let rest = rest.rsplit('@').next().unwrap_or(rest);
    let hostport = rest.split('/').next().unwrap_or(rest);
    match hostport.rsplit_once(':') {
        Some((h, p)) => (h.to_string(), p.to_string()),
        None => (hostport.to_string(), "5432".to_string()),
    }
}

fn postgres_ready(host: &str, port: &str) -> bool {
    Command::new("pg_isready")
        .args(["-h", host, "-p", port, "-q"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Starts the local PostgreSQL cluster if it is down (Debian's
/// `pg_ctlcluster`), or says what to do.
fn ensure_postgres(url: &str) -> Result<(), String> {
    let (host, port) = host_port(url);
    if !found("pg_isready") {
        return Err(format!(
            "PostgreSQL's client tools are missing: install postgresql (a server at {url}, \
             trust authentication), or run `cargo xtask test --sqlite-only`"
        ));
    }
    if postgres_ready(&host, &port) {
        return Ok(());
    }
    let versions: Vec<String> = std::fs::read_dir("/etc/postgresql")
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    if let Some(version) = versions.iter().max() {
        step(&format!("starting PostgreSQL {version}"));
        let _ = Command::new("pg_ctlcluster")
            .args(["--skip-systemctl-redirect", version, "main", "start"])
            .status();
        for _ in 0..60 {
            if postgres_ready(&host, &port) {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    Err(format!(
        "PostgreSQL does not answer at {url}: start it (pg_ctlcluster <version> main start), \
         give another server in IMPORTGATE_TEST_POSTGRES_SERVER, or run `cargo xtask test --sqlite-only`"
    ))
}

/// Prints what tells a failing test from a failing server: the free disk
/// space and the end of the local PostgreSQL log (a server that ran out of
/// disk or restarted drops every connection at once).
fn show_server_state() {
    step("disk and PostgreSQL log");
    let _ = Command::new("df").args(["-h", "/", "/tmp"]).status();
    let logs = std::fs::read_dir("/var/log/postgresql")
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    if let Some(log) = logs
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max()
    {
        let _ = Command::new("tail").arg("-n").arg("40").arg(log).status();
    }
}

/// Drops the databases the PostgreSQL half made (`igt_…`).
fn drop_test_databases(url: &str) {
    let admin = format!("{}/postgres", url.trim_end_matches('/'));
    let Ok(out) = Command::new("psql")
        .args([
            admin.as_str(),
            "-Atqc",
            "SELECT datname FROM pg_database WHERE datname LIKE 'igt\\_%'",
        ])
        .output()
    else {
        return;
    };
    for db in String::from_utf8_lossy(&out.stdout).lines() {
        let _ = Command::new("psql")
            .args([
                admin.as_str(),
                "-qc",
                &format!("DROP DATABASE IF EXISTS \"{db}\""),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The suite, on the server `server` names (its variable and URL), or on
/// SQLite.
fn run_nextest(args: &[&str], server: Option<(&str, &str)>) -> Result<(), String> {
    let mut cmd = Command::new("cargo");
    cmd.args(["nextest", "run"]).args(args);
    cmd.env_remove("IMPORTGATE_TEST_POSTGRES")
        .env_remove("IMPORTGATE_TEST_MYSQL");
    if let Some((variable, url)) = server {
        cmd.env(variable, url);
    }
    if ok(&mut cmd) {
        Ok(())
    } else {
        Err(match server {
            Some(("IMPORTGATE_TEST_MYSQL", _)) => "tests failed on MariaDB".into(),
            Some(_) => "tests failed on PostgreSQL".into(),
            None => "tests failed on SQLite".into(),
        })
    }
}

/// `mariadb` client arguments for the server of a `mysql://user@host:port`
/// URL.
fn mysql_args(url: &str) -> Vec<String> {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let (user, hostport) = rest.split_once('@').unwrap_or(("root", rest));
    let hostport = hostport.split('/').next().unwrap_or(hostport);
    let (host, port) = hostport.rsplit_once(':').unwrap_or((hostport, "3306"));
    ["-h", host, "-P", port, "-u", user]
        .into_iter()
        .map(String::from)
        .collect()
}

fn mysql_ready(url: &str) -> bool {
    Command::new("mariadb-admin")
        .args(mysql_args(url))
        .args(["--silent", "ping"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Starts the local MariaDB server if it is down (Debian's `mariadbd`), or
/// says what to do.
fn ensure_mysql(url: &str) -> Result<(), String> {
    if mysql_ready(url) {
        return Ok(());
    }
    if Path::new("/usr/sbin/mariadbd").exists() {
        step("starting MariaDB");
        let _ = Command::new("start-stop-daemon")
            .args([
                "--start",
                "--oknodo",
                "--background",
                "--exec",
                "/usr/sbin/mariadbd",
            ])
            .status();
        for _ in 0..60 {
            if mysql_ready(url) {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    Err(format!(
        "MariaDB does not answer at {url}: install and start it (apt-get install mariadb-server), \
         give another server in IMPORTGATE_TEST_MYSQL_SERVER, or choose others with --backends"
    ))
}

/// Drops the databases the MariaDB run made (`igt_…`).
fn drop_mysql_test_databases(url: &str) {
    let Ok(out) = Command::new("mariadb")
        .args(mysql_args(url))
        .args([
            "-N",
            "-e",
            "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'igt\\_%'",
        ])
        .output()
    else {
        return;
    };
    for db in String::from_utf8_lossy(&out.stdout).lines() {
        let _ = Command::new("mariadb")
            .args(mysql_args(url))
            .args(["-e", &format!("DROP DATABASE IF EXISTS `{db}`")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_come_from_the_url() {
        assert_eq!(
            host_port("postgres://postgres@127.0.0.1:5432"),
            ("127.0.0.1".into(), "5432".into())
        );
        assert_eq!(
            host_port("postgres://u:p@db.local/x"),
            ("db.local".into(), "5432".into())
        );
    }
}
