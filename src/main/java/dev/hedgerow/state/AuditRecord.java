package dev.hedgerow.state;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** One stored audit event: its stream id (time-ordered) and fields. */
public record AuditRecord(String id, Map<String, String> fields) {
    /** The type of event kept in a stream of its own (see {@link StateStore#appendAudit}): an operator's action. */
    public static final String OWN_STREAM_TYPE = "admin";

    /** Whether the event goes to the operators' stream. */
    static boolean operators(Map<String, String> event) {
        return OWN_STREAM_TYPE.equals(event.get("type"));
    }

    /** Two streams' records, each newest first, as one list newest first, at most {@code limit}. */
    static List<AuditRecord> newestFirst(List<AuditRecord> a, List<AuditRecord> b, int limit) {
        List<AuditRecord> out = new ArrayList<>(Math.min(limit, a.size() + b.size()));
        int i = 0;
        int j = 0;
        while (out.size() < limit && (i < a.size() || j < b.size())) {
            boolean takeA = j >= b.size() || i < a.size() && compareIds(a.get(i).id(), b.get(j).id()) >= 0;
            out.add(takeA ? a.get(i++) : b.get(j++));
        }
        return out;
    }

    /** Stream ids ({@code <millis>-<sequence>}) in time order. */
    static int compareIds(String x, String y) {
        int dx = x.indexOf('-');
        int dy = y.indexOf('-');
        int c = Long.compare(Long.parseLong(x.substring(0, dx)), Long.parseLong(y.substring(0, dy)));
        return c != 0 ? c : Long.compare(Long.parseLong(x.substring(dx + 1)), Long.parseLong(y.substring(dy + 1)));
    }
}
