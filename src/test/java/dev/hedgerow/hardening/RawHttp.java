package dev.hedgerow.hardening;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A deliberately dumb HTTP/1.1 client over a plain socket, so tests can send what no well-behaved client would:
 * any header bytes, any body bytes, lying lengths. One request per connection. A server that does not answer
 * within the read timeout fails the test as a hang.
 */
final class RawHttp {
    static final int READ_TIMEOUT_MS = 10_000;

    record Response(int status, Map<String, String> headers, String body) {
    }

    private RawHttp() {
    }

    /** Builds a request: {@code headers} is the raw header block (each line ending in CRLF), body may be null. */
    static byte[] request(String method, String path, byte[] headers, byte[] body) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes((method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n")
                .getBytes(StandardCharsets.ISO_8859_1));
        out.writeBytes(headers);
        if (body != null) {
            out.writeBytes(("Content-Length: " + body.length + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        }
        out.writeBytes("\r\n".getBytes(StandardCharsets.ISO_8859_1));
        if (body != null) {
            out.writeBytes(body);
        }
        return out.toByteArray();
    }

    static Response send(int port, byte[] request) {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(READ_TIMEOUT_MS);
            OutputStream out = s.getOutputStream();
            try {
                out.write(request);
                out.flush();
            } catch (IOException e) {
                // the server may answer and close before it has read everything (413, 431): read what it said
            }
            return read(s.getInputStream());
        } catch (SocketTimeoutException e) {
            throw new AssertionError("no answer within " + READ_TIMEOUT_MS + " ms: the server hangs", e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Response read(InputStream in) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        int n;
        try {
            while ((n = in.read(buf)) > 0) {
                all.write(buf, 0, n);
            }
        } catch (java.net.SocketException e) {
            // a reset after the answer was sent: keep what arrived
        }
        byte[] bytes = all.toByteArray();
        String text = new String(bytes, StandardCharsets.ISO_8859_1);
        while (text.startsWith("HTTP/1.1 1")) {
            // an interim answer (100 Continue): the real one follows
            int skip = text.indexOf("\r\n\r\n") + 4;
            bytes = java.util.Arrays.copyOfRange(bytes, skip, bytes.length);
            text = text.substring(skip);
        }
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) {
            throw new AssertionError("no HTTP answer (connection closed after " + bytes.length + " bytes): " + text);
        }
        String[] lines = text.substring(0, end).split("\r\n");
        int status = Integer.parseInt(lines[0].split(" ")[1]);
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int c = lines[i].indexOf(':');
            headers.put(lines[i].substring(0, c).trim().toLowerCase(Locale.ROOT), lines[i].substring(c + 1).trim());
        }
        byte[] rest = java.util.Arrays.copyOfRange(bytes, end + 4, bytes.length);
        if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            rest = dechunk(rest);
        } else if (headers.containsKey("content-length")) {
            int len = Integer.parseInt(headers.get("content-length"));
            rest = java.util.Arrays.copyOf(rest, Math.min(len, rest.length));
        }
        return new Response(status, headers, new String(rest, StandardCharsets.UTF_8));
    }

    private static byte[] dechunk(byte[] b) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int i = 0;
        while (i < b.length) {
            int eol = i;
            while (eol + 1 < b.length && !(b[eol] == '\r' && b[eol + 1] == '\n')) {
                eol++;
            }
            String sizeLine = new String(b, i, eol - i, StandardCharsets.ISO_8859_1).split(";")[0].trim();
            int size = sizeLine.isEmpty() ? 0 : Integer.parseInt(sizeLine, 16);
            if (size == 0) {
                break;
            }
            out.write(b, eol + 2, Math.min(size, b.length - eol - 2));
            i = eol + 2 + size + 2;
        }
        return out.toByteArray();
    }
}
