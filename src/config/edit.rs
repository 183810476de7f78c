//! Writing `.swamp.toml` over a file a person edited: the new config is
//! merged into the existing document with `toml_edit`, so comments, key
//! order, blank lines and quoting of everything that did not change are
//! kept (as cargo and uv keep `Cargo.toml` and `pyproject.toml`).

use toml_edit::{DocumentMut, Item, TableLike, Value};

/// `existing` (the file as it is) updated to say what `new` (a fresh
/// serialisation of the config) says. `before`, a fresh serialisation of
/// the config as `existing` read: a key the file leaves out (a default)
/// and that `new` gives as `before` did is not the user's change, and
/// stays out. `None` when `existing` is not TOML `toml_edit` reads, in
/// which case the caller writes `new` as it is.
pub(super) fn merged(existing: &str, before: Option<&str>, new: &str) -> Option<String> {
    let mut doc: DocumentMut = existing.parse().ok()?;
    let new: DocumentMut = new.parse().ok()?;
    let before: Option<DocumentMut> = before.and_then(|b| b.parse().ok());
    merge_tables(
        doc.as_table_mut(),
        before.as_ref().map(|b| b.as_table() as &dyn TableLike),
        new.as_table(),
    );
    Some(doc.to_string())
}

/// Returns whether keys were added (an inline table then needs its
/// spacing made even again).
fn merge_tables(
    old: &mut dyn TableLike,
    before: Option<&dyn TableLike>,
    new: &dyn TableLike,
) -> bool {
    let mut added = false;
    let gone: Vec<String> = old
        .iter()
        .map(|(k, _)| k.to_string())
        .filter(|k| !new.contains_key(k))
        .collect();
    for key in gone {
        old.remove(&key);
    }
    for (key, item) in new.iter() {
        let was = before.and_then(|b| b.get(key));
        match old.get_mut(key) {
            Some(existing) => merge_item(existing, was, item),
            // Left out of the file and unchanged: a default, not written.
            None if was.is_some_and(|w| w.to_string() == item.to_string()) => {}
            None => match (was.and_then(Item::as_table_like), item.as_table_like()) {
                // A table the file leaves out: only the keys that changed.
                (Some(b), Some(n)) => {
                    let mut table = toml_edit::Table::new();
                    if merge_tables(&mut table, Some(b), n) || !table.is_empty() {
                        old.insert(key, Item::Table(table));
                        added = true;
                    }
                }
                _ => {
                    old.insert(key, item.clone());
                    added = true;
                }
            },
        }
    }
    added
}

fn merge_item(old: &mut Item, before: Option<&Item>, new: &Item) {
    if let (Some(o), Some(n)) = (old.as_table_like_mut(), new.as_table_like()) {
        if merge_tables(o, before.and_then(Item::as_table_like), n)
            && let Some(inline) = old.as_inline_table_mut()
        {
            inline.fmt();
        }
        return;
    }
    if let (Some(o), Some(n)) = (old.as_value_mut(), new.as_value()) {
        if !same(o, n) {
            // The comment after the value stays with it.
            let decor = o.decor().clone();
            *o = n.clone();
            *o.decor_mut() = decor;
        }
        return;
    }
    *old = new.clone();
}

/// Equal as TOML values, whatever their formatting.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.value() == y.value(),
        (Value::Integer(x), Value::Integer(y)) => x.value() == y.value(),
        (Value::Float(x), Value::Float(y)) => x.value() == y.value(),
        (Value::Boolean(x), Value::Boolean(y)) => x.value() == y.value(),
        (Value::Datetime(x), Value::Datetime(y)) => x.value() == y.value(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| same(a, b))
        }
        (Value::InlineTable(x), Value::InlineTable(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::merged as merged3;

    fn merged(existing: &str, new: &str) -> Option<String> {
        merged3(existing, None, new)
    }

    #[test]
    fn comments_order_and_quoting_survive_a_change_elsewhere() {
        let existing = r#"# The shared cluster store.
repo_id = '11111111-2222-3333-4444-555555555555'   # do not change

[datastore]
# NFS mount on every host
type = "filesystem"
path = "/mnt/swamp"
"#;
        let new = r#"repo_id = "11111111-2222-3333-4444-555555555555"
namespace = "infra"

[datastore]
type = "filesystem"
path = "/mnt/swamp"
"#;
        let out = merged(existing, new).unwrap();
        assert_eq!(
            out,
            r#"# The shared cluster store.
repo_id = '11111111-2222-3333-4444-555555555555'   # do not change
namespace = "infra"

[datastore]
# NFS mount on every host
type = "filesystem"
path = "/mnt/swamp"
"#
        );
    }

    #[test]
    fn a_changed_value_keeps_its_comment_and_a_dropped_key_goes() {
        let existing = "namespace = \"a\" # ours\nrepo_id = \"x\"\n\n[sync]\nconcurrency = 8\n";
        let new = "repo_id = \"x\"\nnamespace = \"b\"\n";
        let out = merged(existing, new).unwrap();
        assert_eq!(out, "namespace = \"b\" # ours\nrepo_id = \"x\"\n");
    }

    #[test]
    fn an_inline_table_stays_inline() {
        let existing = "repo_id = \"x\"\ndatastore = { type = \"s3\", bucket = \"b\" }\n";
        let new =
            "repo_id = \"x\"\n\n[datastore]\ntype = \"s3\"\nbucket = \"c\"\nregion = \"eu\"\n";
        let out = merged(existing, new).unwrap();
        assert_eq!(
            out,
            "repo_id = \"x\"\ndatastore = { type = \"s3\", bucket = \"c\", region = \"eu\" }\n"
        );
    }

    #[test]
    fn a_default_the_file_leaves_out_stays_out_and_only_the_key_set_is_written() {
        let existing = "repo_id = \"x\" # ours\n\n[datastore]\ntype = \"s3\"\nbucket = \"b\"\n";
        let before = "repo_id = \"x\"\n\n[datastore]\ntype = \"s3\"\nbucket = \"b\"\n\n[sync]\nconflict = \"fail\"\nmax_delete_percent = 50\nhydration = \"full\"\n";
        let new = "repo_id = \"x\"\n\n[datastore]\ntype = \"s3\"\nbucket = \"b\"\n\n[sync]\nconflict = \"fail\"\nmax_delete_percent = 50\nhydration = \"lazy\"\n";
        let out = merged3(existing, Some(before), new).unwrap();
        assert_eq!(
            out,
            "repo_id = \"x\" # ours\n\n[datastore]\ntype = \"s3\"\nbucket = \"b\"\n\n[sync]\nhydration = \"lazy\"\n"
        );
        // Nothing changed: the file as it was.
        assert_eq!(merged3(existing, Some(before), before).unwrap(), existing);
    }

    #[test]
    fn what_toml_edit_cannot_read_is_not_merged() {
        assert_eq!(merged("repo_id = ", "repo_id = \"x\"\n"), None);
    }
}
