//! A real `redis-server` for tests of the server-aided PSI's Redis store: started on a free
//! loopback port with persistence off and its own directory, stopped on drop. `redis-server`
//! must be on PATH (`bash scripts/test.sh` installs it on Debian).

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` process of the calling test's own, killed on drop.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts `redis-server` on a free loopback port and waits until it answers PING (tries five
    /// ports: a free port can be taken between the probe and the server's bind).
    pub fn start() -> io::Result<RedisServer> {
        if Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_err()
        {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "redis-server is not installed; the Redis store tests need it on PATH \
                 (`apt-get install redis-server`, or run `bash scripts/test.sh`, which installs it)",
            ));
        }
        for attempt in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            let dir = std::env::temp_dir().join(format!(
                "blindjoin-redis-{}-{port}-{attempt}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir)?;
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            let mut server = RedisServer { child, port, dir };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if server.child.try_wait()?.is_some() {
                    break;
                }
                if server.ping() {
                    return Ok(server);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "redis-server did not answer PING on a loopback port in 5 tries",
        ))
    }

    /// Whether the server answers `PING` with `+PONG`.
    fn ping(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let mut buf = [0u8; 7];
        s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
