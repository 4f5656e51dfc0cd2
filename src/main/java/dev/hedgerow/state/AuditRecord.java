package dev.hedgerow.state;

import java.util.Map;

/** One stored audit event: its stream id (time-ordered) and fields. */
public record AuditRecord(String id, Map<String, String> fields) {
}
