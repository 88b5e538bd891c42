//! Task records as each revision writes them: the revision's
//! [`TaskWire`](duomcp_proto::era::tasks::TaskWire), chosen by the era the task was created in.

use super::store::TaskRecord;
use serde_json::Value;

/// The status notification of a task, as the era it was created in sends it: 2025-11-25
/// `notifications/tasks/status`, or the 2026-07-28 `notifications/tasks` with the
/// `DetailedTask` and the listen stream's `tag` as `_meta`.
pub(crate) fn status_notification(record: &TaskRecord, tag: Option<&Value>) -> Vec<u8> {
    record.era.wire().status_notification(record, tag)
}
