package dev.hedgerow.sim;

import io.vertx.core.Vertx;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Runs one simulator as a process, for the demo and benchmarks:
 * {@code java -cp ... dev.hedgerow.sim.SimMain [--config sim.json] [--host 127.0.0.1] [--port 0]}.
 * Without a config it serves one model, {@code sim-model}, with a little latency. Prints the base URL.
 */
public final class SimMain {

    private SimMain() {
    }

    public static void main(String[] args) throws Exception {
        String config = null;
        String host = "127.0.0.1";
        int port = 0;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--config" -> config = args[i + 1];
                case "--host" -> host = args[i + 1];
                case "--port" -> port = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        SimConfig cfg = config != null ? SimJson.readConfig(Files.readString(Path.of(config)))
                : SimConfig.of(1).withModel("sim-model",
                ModelScript.defaults().withLatency(ModelScript.Latency.of(150, 60).withJitter(0.2)));
        Vertx vertx = Vertx.vertx();
        SimServer sim = SimServer.start(vertx, cfg, host, port).toCompletionStage().toCompletableFuture().get();
        System.out.println("hedgerow simulator: http://" + host + ":" + sim.port() + "/v1 models "
                + cfg.models().keySet());
        Runtime.getRuntime().addShutdownHook(new Thread(() -> vertx.close()));
    }
}
