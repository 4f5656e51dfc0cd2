package dev.hedgerow.testsupport;

/**
 * A private {@link RedisServer} that also listens with TLS, as a managed Redis does (ElastiCache Serverless takes TLS
 * only): its certificate, for the name {@code localhost} only, is issued by a test authority made for it with
 * {@code openssl} ({@link TestCertificates}), whose certificate {@link #caFile()} is. The plain port stays open for the
 * test's own {@link Resp} checks. {@link #close()} stops the server and deletes the files.
 */
public final class TlsRedis implements AutoCloseable {
    private final TestCertificates certs;
    private final int tlsPort;
    private final RedisServer server;

    private TlsRedis(TestCertificates certs, int tlsPort, RedisServer server) {
        this.certs = certs;
        this.tlsPort = tlsPort;
        this.server = server;
    }

    public static TlsRedis start() {
        TestCertificates certs = TestCertificates.forLocalhost();
        try {
            int tlsPort = RedisServer.freePort(false);
            RedisServer server = RedisServer.start(certs.redisArgs(tlsPort), false);
            return new TlsRedis(certs, tlsPort, server);
        } catch (RuntimeException e) {
            certs.close();
            throw e;
        }
    }

    /** The TLS address by the name its certificate holds: {@code rediss://localhost:PORT}. */
    public String url() {
        return "rediss://localhost:" + tlsPort;
    }

    /** The TLS address by an address its certificate does not name: {@code rediss://127.0.0.1:PORT}. */
    public String urlByAddress() {
        return "rediss://127.0.0.1:" + tlsPort;
    }

    /** The PEM certificate of the authority that issued the server's. */
    public String caFile() {
        return certs.caFile();
    }

    /** The server (its plain port, for checks through {@link Resp}). */
    public RedisServer server() {
        return server;
    }

    @Override
    public void close() {
        server.close();
        certs.close();
    }
}
