package dev.hedgerow.sim;

import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/**
 * What the simulator's own tests share: one Vert.x per test class, and per test a fresh simulator serving what the
 * class's {@link #config()} says, with an HTTP client to it. Not thread-safe: a class's tests run one at a time.
 */
abstract class SimFixture {
    static Vertx vertx;
    SimServer sim;
    SimHttp http;

    /** What the simulator serves in every test of the class. */
    abstract SimConfig config();

    @BeforeAll
    static void startVertx() {
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void closeVertx() {
        vertx.close();
    }

    @BeforeEach
    void startSim() {
        sim = SimServer.startBlocking(vertx, config());
        http = new SimHttp(sim);
    }

    @AfterEach
    void stopSim() {
        sim.close();
    }
}
