package dev.hedgerow.testsupport;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A minimal blocking RESP2 client for test plumbing only (health checks of the private servers this package starts):
 * sends one command and returns its reply flattened to text. Not for store code. Stateless and thread-safe.
 */
public final class Resp {

    private Resp() {
    }

    /** Sends one command to 127.0.0.1:port and returns the reply as text (arrays joined by newlines). */
    public static String command(int port, String... args) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            s.setSoTimeout(2000);
            OutputStream out = s.getOutputStream();
            StringBuilder req = new StringBuilder("*").append(args.length).append("\r\n");
            for (String a : args) {
                byte[] b = a.getBytes(StandardCharsets.UTF_8);
                req.append('$').append(b.length).append("\r\n").append(a).append("\r\n");
            }
            out.write(req.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            return read(new BufferedInputStream(s.getInputStream()));
        }
    }

    /**
     * A MONITOR connection to 127.0.0.1:port: every command the server runs from the moment {@link #open} returns,
     * scripts' own commands included (tagged {@code [0 lua]}), one line each in the server's order. Not thread-safe.
     */
    public static final class Monitor implements AutoCloseable {
        private final Socket socket;
        private final InputStream in;
        private final int port;

        private Monitor(Socket socket, int port) throws IOException {
            this.socket = socket;
            this.port = port;
            this.in = new BufferedInputStream(socket.getInputStream());
        }

        /** Starts monitoring; returns once the server has confirmed it (later commands are all seen). */
        public static Monitor open(int port) throws IOException {
            Socket s = new Socket();
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            s.setSoTimeout(5000);
            Monitor m = new Monitor(s, port);
            s.getOutputStream().write("*1\r\n$7\r\nMONITOR\r\n".getBytes(StandardCharsets.UTF_8));
            s.getOutputStream().flush();
            String ok = line(m.in);
            if (!"+OK".equals(ok)) {
                s.close();
                throw new IOException("MONITOR refused: " + ok);
            }
            return m;
        }

        /**
         * The commands the server ran since {@link #open} (or the last call), up to now: it sends a marker command
         * of its own on another connection and returns every line before the marker's, so nothing waits on time.
         */
        public java.util.List<String> commandsSoFar() throws IOException {
            String marker = "monitor-mark-" + System.nanoTime();
            command(port, "ECHO", marker);
            java.util.List<String> lines = new java.util.ArrayList<>();
            while (true) {
                String l = line(in);
                if (l.contains(marker)) {
                    return lines;
                }
                lines.add(l);
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** True when the server on this port answers PING with PONG. */
    public static boolean pings(int port) {
        try {
            return "PONG".equals(command(port, "PING"));
        } catch (IOException e) {
            return false;
        }
    }

    private static String read(InputStream in) throws IOException {
        String line = line(in);
        char type = line.charAt(0);
        String rest = line.substring(1);
        switch (type) {
            case '+':
            case ':':
                return rest;
            case '-':
                throw new IOException("redis error: " + rest);
            case '$': {
                int n = Integer.parseInt(rest);
                if (n < 0) {
                    return null;
                }
                byte[] b = in.readNBytes(n + 2);
                return new String(b, 0, n, StandardCharsets.UTF_8);
            }
            case '*': {
                int n = Integer.parseInt(rest);
                StringBuilder sb = new StringBuilder();
                for (int i = 0; i < n; i++) {
                    if (i > 0) {
                        sb.append('\n');
                    }
                    sb.append(read(in));
                }
                return sb.toString();
            }
            default:
                throw new IOException("unexpected reply: " + line);
        }
    }

    private static String line(InputStream in) throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int prev = -1;
        while (true) {
            int c = in.read();
            if (c < 0) {
                throw new IOException("connection closed");
            }
            if (prev == '\r' && c == '\n') {
                byte[] b = buf.toByteArray();
                return new String(b, 0, b.length - 1, StandardCharsets.UTF_8);
            }
            buf.write(c);
            prev = c;
        }
    }
}
