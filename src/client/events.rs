//! `importgate events tail`: follows `GET /api/events/stream` and prints
//! one line per event (time, type, subject, state, masked person). When
//! the connection drops it connects again with `Last-Event-ID`, so no
//! event is lost or printed twice. A refused key or a bad `--after` ends
//! it (exit status 2).

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

/// How long a stream may say nothing before it is taken for dead.
const SILENCE: Duration = Duration::from_secs(60);

/// What to follow and where.
pub struct Tail<'a> {
    pub service: super::Service<'a>,
    /// Start after this event (`evt_…`); else with the events from now on.
    pub after: Option<&'a str>,
    /// Print only these types (all when empty).
    pub types: Vec<String>,
}

/// One server-sent event as it arrives: its id, type and data.
#[derive(Debug, Default, PartialEq)]
pub struct Message {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

/// Reads server-sent events out of the bytes of a stream, as they come.
#[derive(Debug, Default)]
pub struct Parser {
    buffer: Vec<u8>,
    current: Message,
    has_data: bool,
}

impl Parser {
    /// Takes more bytes; gives the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Message> {
        self.buffer.extend_from_slice(bytes);
        let mut done = Vec::new();
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                let message = std::mem::take(&mut self.current);
                if std::mem::take(&mut self.has_data) {
                    done.push(message);
                }
                continue;
            }
            if line.starts_with(':') {
                continue; // a comment: the heartbeat
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line, ""),
            };
            match field {
                "id" => self.current.id = Some(value.to_string()),
                "event" => self.current.event = Some(value.to_string()),
                "data" => {
                    if self.has_data {
                        self.current.data.push('\n');
                    }
                    self.current.data.push_str(value);
                    self.has_data = true;
                }
                _ => {}
            }
        }
        done
    }
}

/// The line printed for an event: time, type, subject, state, person,
/// in columns as wide as their widest usual value.
pub fn line(event: &Value) -> String {
    let data = &event["data"];
    let ty = text(&event["type"]);
    let (subject, state, person) = if data["job"].is_object() {
        let j = &data["job"];
        (text(&j["id"]), text(&j["state"]), job_person(&ty, j))
    } else if data["key_request"].is_object() {
        let r = &data["key_request"];
        (text(&r["id"]), text(&r["state"]), &r["person"]["display"])
    } else if data["rule_proposal"].is_object() {
        let p = &data["rule_proposal"];
        let by = match &p["decided_by"] {
            Value::Object(_) => &p["decided_by"]["display"],
            _ => &p["proposed_by"]["display"],
        };
        (text(&p["id"]), text(&p["state"]), by)
    } else if data["export"].is_object() {
        let x = &data["export"];
        let rows = format!("{} rows", x["rows"].as_u64().unwrap_or(0));
        (text(&x["id"]), rows, &x["by"]["display"])
    } else {
        let k = &data["key"];
        (text(&k["id"]), text(&k["role"]), &k["person"]["display"])
    };
    format!(
        "{}  {:<24} {:<30} {:<18} {}",
        text(&event["created_at"]),
        ty,
        subject,
        state,
        text(person),
    )
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or("-").to_string()
}

/// Who made a job's event: the person whose decision it records (the
/// approver of a commit, the one who refused, the rollback's approver),
/// who asked for a rollback, else the submitter.
fn job_person<'a>(ty: &str, job: &'a Value) -> &'a Value {
    let last_decision = (job["decisions"].as_array())
        .and_then(|d| d.last())
        .map(|d| &d["by"]["display"]);
    match ty {
        "job.committed" | "job.rejected" | "job.rolled_back" | "job.expired" => {
            last_decision.unwrap_or(&Value::Null)
        }
        "job.rollback_requested" if job["gate"].is_object() => {
            &job["gate"]["requested_by"]["display"]
        }
        _ => &job["submitter"]["display"],
    }
}

/// Follows the stream until it is stopped; returns the exit status (2
/// when the service refuses the request).
pub async fn tail(t: Tail<'_>) -> anyhow::Result<i32> {
    let base = t.service.base();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()?;
    let mut last: Option<String> = None;
    let mut pause = Duration::from_millis(500);
    loop {
        let query = match (&last, t.after) {
            (None, Some(after)) => format!("?{}", serde_urlencoded::to_string([("after", after)])?),
            _ => String::new(),
        };
        let mut req = client
            .get(format!("{base}/api/events/stream{query}"))
            .header("X-API-Key", t.service.key)
            .header("Accept", "text/event-stream");
        if let Some(id) = &last {
            req = req.header("Last-Event-ID", id.as_str());
        }
        match req.send().await {
            Ok(resp) if resp.status().is_success() => {
                pause = Duration::from_millis(500);
                let mut parser = Parser::default();
                let mut body = resp.bytes_stream();
                // The service sends a comment every 15 s: a minute of
                // silence is a connection gone dead.
                while let Ok(Some(chunk)) = tokio::time::timeout(SILENCE, body.next()).await {
                    let Ok(chunk) = chunk else { break };
                    for m in parser.push(&chunk) {
                        if m.id.is_some() {
                            last.clone_from(&m.id);
                        }
                        let ty = m.event.as_deref().unwrap_or("message");
                        if !t.types.is_empty() && !t.types.iter().any(|w| w == ty) {
                            continue;
                        }
                        match serde_json::from_str::<Value>(&m.data) {
                            Ok(event) => println!("{}", line(&event)),
                            Err(_) => println!("{ty} {}", m.data),
                        }
                    }
                }
                eprintln!("the stream ended; connecting again");
            }
            Ok(resp) if resp.status().is_client_error() && resp.status().as_u16() != 429 => {
                let status = resp.status();
                let body: Value = resp.json().await.unwrap_or(Value::Null);
                eprintln!(
                    "refused ({status}): {}",
                    body["detail"].as_str().unwrap_or("")
                );
                return Ok(2);
            }
            Ok(resp) => eprintln!("the service answered {}; trying again", resp.status()),
            Err(e) => eprintln!("cannot reach {base}: {e}; trying again"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(30));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_read_across_chunks_and_comments_skipped() {
        let mut p = Parser::default();
        assert!(
            p.push(b": heartbeat\n\nid: evt_1\nevent: job.cre")
                .is_empty()
        );
        let got = p.push(b"ated\ndata: {\"a\":1}\r\n\n");
        assert_eq!(
            got,
            vec![Message {
                id: Some("evt_1".into()),
                event: Some("job.created".into()),
                data: "{\"a\":1}".into(),
            }]
        );
        let event = serde_json::json!({
            "id": "evt_1", "type": "job.created", "created_at": "2026-01-01T00:00:00.000Z",
            "data": {"job": {"id": "job_1", "state": "validating",
                             "submitter": {"key_id": "key_1", "display": "bu***i"}}}
        });
        assert_eq!(
            line(&event),
            "2026-01-01T00:00:00.000Z  job.created              job_1                          validating         bu***i"
        );
        // A decision's event names who decided, not the submitter.
        let approved = serde_json::json!({
            "id": "evt_2", "type": "job.committed", "created_at": "2026-01-01T00:00:01.000Z",
            "data": {"job": {"id": "job_01JD8Z3K6W0Q2T5N8XJ4R7M9C1", "state": "committed",
                             "submitter": {"display": "bu***i"},
                             "decisions": [{"action": "commit", "decision": "approved",
                                            "by": {"display": "si***h"}}]}}
        });
        let shown = line(&approved);
        assert!(shown.ends_with("committed          si***h"), "{shown}");
        let first = line(&event);
        assert_eq!(
            first.find("validating"),
            shown.rfind("committed"),
            "columns line up"
        );
    }
}
