package dev.hedgerow.upstream;

/** Why an exchange failed below HTTP. */
public record TransportFailure(Kind kind, String detail) {

    public enum Kind {
        /** Connection refused, DNS failure, TLS handshake failure. */
        CONNECT,
        /** No connection within the connect timeout. */
        CONNECT_TIMEOUT,
        /** The connection was reset or closed before the response ended. */
        RESET,
        /** Any other read or write failure. */
        IO
    }

    public static TransportFailure classify(Throwable t) {
        String name = t.getClass().getSimpleName();
        String msg = String.valueOf(t.getMessage());
        String lower = msg.toLowerCase(java.util.Locale.ROOT);
        if (name.contains("ConnectTimeout") || lower.contains("connection timed out")) {
            return new TransportFailure(Kind.CONNECT_TIMEOUT, msg);
        }
        if (name.contains("ConnectException") || name.contains("UnknownHost") || name.contains("SSL")
                || lower.contains("connection refused") || lower.contains("failed to resolve")) {
            return new TransportFailure(Kind.CONNECT, name + ": " + msg);
        }
        if (name.contains("Closed") || lower.contains("reset") || lower.contains("closed")) {
            return new TransportFailure(Kind.RESET, name + ": " + msg);
        }
        return new TransportFailure(Kind.IO, name + ": " + msg);
    }
}
