//! A static HTTP server on the loopback interface, for apt to download from.
//!
//! The server binds port 0 itself and reports the port the kernel gave it. Picking a "free"
//! port in the test and handing it over is racy: two tests running in parallel can be handed
//! the same port, the second server fails to bind, the second test's readiness probe reaches
//! the first test's server, and when that test ends apt meets "connection refused" (seen in
//! CI: `repo_apt` on bookworm while `repo_apt` on trixie ran).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Python's `http.server` serving one directory on 127.0.0.1; killed when dropped (also when
/// a test panics).
pub struct HttpServer {
    child: Child,
    port: u16,
}

const SERVE: &str = r#"
import functools, http.server, sys
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
handler = functools.partial(Quiet, directory=sys.argv[1])
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

impl HttpServer {
    /// Serve `dir`; returns once the server listens (it has printed its port after binding).
    pub fn serve(dir: &Path) -> HttpServer {
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(SERVE)
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 is installed (scripts/install-deps installs it)");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the server's port");
        let port = match line.trim().parse() {
            Ok(port) => port,
            Err(_) => {
                let _ = child.kill();
                let status = child.wait();
                panic!(
                    "http.server for {} did not start ({status:?})",
                    dir.display()
                );
            }
        };
        HttpServer { child, port }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<port>/`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    #[test]
    fn two_servers_get_their_own_ports_and_serve_their_own_files() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::write(a.path().join("f"), "from a").unwrap();
        std::fs::write(b.path().join("f"), "from b").unwrap();
        let sa = HttpServer::serve(a.path());
        let sb = HttpServer::serve(b.path());
        assert_ne!(sa.port(), sb.port());
        for (server, want) in [(&sa, "from a"), (&sb, "from b")] {
            let mut conn = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
            conn.write_all(b"GET /f HTTP/1.0\r\n\r\n").unwrap();
            let mut reply = String::new();
            conn.read_to_string(&mut reply).unwrap();
            assert!(reply.starts_with("HTTP/1.0 200"), "{reply}");
            assert!(reply.ends_with(want), "{reply}");
        }
        let port = sa.port();
        drop(sa);
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "killed on drop"
        );
    }
}
