//! Why a saved plan is stale, in words: the first way the plan made now
//! differs from the saved one (an action or conflict added, dropped or
//! changed, named by its kind and path), and which prunes a saved plan
//! still makes ([`settle_prunes`]).

use super::action::PruneTrash;
use super::{Action, Plan};

/// A saved plan prunes what it said it would, and only what is still due:
/// prunes that came due since it was made wait for the next plan, and
/// cannot make it stale.
pub(crate) fn settle_prunes(saved: &Plan, now: &mut Plan) -> Plan {
    let id = |a: &Action| match a {
        Action::PruneTrash(PruneTrash { id, .. }) => Some(id.clone()),
        _ => None,
    };
    let due: Vec<String> = now.actions.iter().filter_map(id).collect();
    now.actions
        .retain(|a| id(a).is_none_or(|i| saved.actions.iter().filter_map(id).any(|s| s == i)));
    let mut saved = saved.clone();
    saved
        .actions
        .retain(|a| id(a).is_none_or(|i| due.contains(&i)));
    settle_history_prunes(&mut saved, now);
    saved
}

/// The history records both plans prune, on both: one that came due
/// since, or went, is no difference.
fn settle_history_prunes(saved: &mut Plan, now: &mut Plan) {
    fn keys(plan: &Plan) -> Vec<crate::plan::action::RemoteObjectRef> {
        plan.actions
            .iter()
            .filter_map(|a| match a {
                Action::PruneHistory(p) => Some(p.prune.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    }
    let (in_saved, in_now) = (keys(saved), keys(now));
    for (plan, other) in [(&mut *saved, &in_now), (&mut *now, &in_saved)] {
        plan.actions.retain_mut(|a| match a {
            Action::PruneHistory(p) => {
                p.prune.retain(|r| other.contains(r));
                !p.prune.is_empty()
            }
            _ => true,
        });
    }
}

/// The first way `now` differs from `saved`, in words; `None` when equal.
pub(crate) fn first_difference(saved: &Plan, now: &Plan) -> Option<String> {
    if let Some(d) = first_action_difference(&saved.actions, &now.actions) {
        return Some(d);
    }
    if let Some(d) = conflict_difference(&saved.conflicts, &now.conflicts) {
        return Some(d);
    }
    if saved.target != now.target || saved.sources != now.sources {
        return Some("the plan's target or sources differ from planning now".to_string());
    }
    if saved.remote != now.remote {
        return Some(
            "the plan's remote side (bucket, prefix, object count or policy) differs from planning now"
                .to_string(),
        );
    }
    (saved.scope != now.scope).then(|| "the plan's scope differs".to_string())
}

/// How the conflicts (of either kind of plan) differ, in words; `None`
/// when equal.
pub(crate) fn conflict_difference<C: PartialEq>(saved: &[C], now: &[C]) -> Option<String> {
    (saved != now).then(|| {
        format!(
            "the saved plan lists {} conflict(s), planning now finds {}",
            saved.len(),
            now.len()
        )
    })
}

/// The first action (of either kind of plan) that differs, in words: as
/// plan rows (kind, path) and what differs between them (size, hash,
/// remote state, …), never raw JSON.
pub(crate) fn first_action_difference<A: PartialEq + serde::Serialize>(
    saved: &[A],
    now: &[A],
) -> Option<String> {
    for (i, (a, b)) in saved.iter().zip(now).enumerate() {
        if a != b {
            return Some(format!("action {} {}", i + 1, row_difference(a, b)));
        }
    }
    if saved.len() != now.len() {
        let n = saved.len().min(now.len());
        let extra = match (saved.get(n), now.get(n)) {
            (Some(a), _) => format!("; the saved plan also has {}", row(a)),
            (_, Some(b)) => format!("; planning now also gives {}", row(b)),
            _ => String::new(),
        };
        return Some(format!(
            "the saved plan has {} action(s), planning now gives {}{extra}",
            saved.len(),
            now.len()
        ));
    }
    None
}

/// An action's kind and what it is about (`upload data/x/1/raw`), from
/// its serialised form (either kind of plan).
pub(super) fn row_head(v: &serde_json::Value) -> String {
    let kind = v["kind"].as_str().unwrap_or("action");
    match ["path", "id", "to"].iter().find_map(|k| v[k].as_str()) {
        Some(what) => format!("{kind} {what}"),
        None => kind.to_string(),
    }
}

/// The fields of an action besides its kind and path, in words.
pub(super) fn row_fields(v: &serde_json::Value) -> Vec<(String, String)> {
    let Some(map) = v.as_object() else {
        return Vec::new();
    };
    map.iter()
        .filter(|(k, _)| !matches!(k.as_str(), "kind" | "path"))
        .map(|(k, v)| (k.replace('_', " "), field_words(k, v)))
        .collect()
}

/// One field's value, short: a sha256 by its first 12 digits, a size in
/// bytes, a remote state by its name (and version).
pub(super) fn field_words(key: &str, v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::String(s) if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
            format!("{}…", &s[..12])
        }
        Value::String(s) => s.clone(),
        Value::Number(n) if matches!(key, "size" | "bytes") => format!("{n} B"),
        Value::Object(m) if m.contains_key("state") => {
            let state = m["state"].as_str().unwrap_or("?");
            match m.get("version").and_then(Value::as_str) {
                Some(version) => format!("{state} (version {version})"),
                None => state.to_string(),
            }
        }
        Value::Null => "none".into(),
        Value::Array(a) => format!("{} item(s)", a.len()),
        other => {
            let text = other.to_string();
            match text.char_indices().nth(60) {
                Some((i, _)) => format!("{}…", &text[..i]),
                None => text,
            }
        }
    }
}

/// An action as a plan row: `upload data/x/1/raw (size 2 B, sha256
/// cf94…, remote absent)`.
pub(super) fn row<A: serde::Serialize>(a: &A) -> String {
    let v = serde_json::to_value(a).expect("actions serialise");
    let fields: Vec<String> = row_fields(&v)
        .into_iter()
        .map(|(k, w)| format!("{k} {w}"))
        .collect();
    match fields.is_empty() {
        true => row_head(&v),
        false => format!("{} ({})", row_head(&v), fields.join(", ")),
    }
}

/// How two actions at the same place in the plans differ: the fields that
/// changed, when it is the same kind of action on the same path; else both
/// rows.
pub(super) fn row_difference<A: serde::Serialize>(saved: &A, now: &A) -> String {
    let (a, b) = (
        serde_json::to_value(saved).expect("actions serialise"),
        serde_json::to_value(now).expect("actions serialise"),
    );
    if row_head(&a) != row_head(&b) {
        return format!(
            "differs: the saved plan has {}, planning now gives {}",
            row(saved),
            row(now)
        );
    }
    let (then, now_fields) = (row_fields(&a), row_fields(&b));
    let mut changed = Vec::new();
    for (k, w) in &now_fields {
        match then.iter().find(|(k2, _)| k2 == k) {
            Some((_, was)) if was == w => {}
            Some((_, was)) => changed.push(format!("{k} {was} in the saved plan, {w} now")),
            None => changed.push(format!("{k} {w} now")),
        }
    }
    for (k, was) in &then {
        if !now_fields.iter().any(|(k2, _)| k2 == k) {
            changed.push(format!("{k} {was} in the saved plan, none now"));
        }
    }
    format!("({}) differs: {}", row_head(&a), changed.join("; "))
}
