package dev.hedgerow.time;

/** A handle to a scheduled task. Cancelling twice, or after the task ran, is harmless. */
@FunctionalInterface
public interface Cancellable {
    void cancel();

    Cancellable NONE = () -> { };
}
