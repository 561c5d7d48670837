package io.rocketpipe.interop.grpc;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * Transactions: a Producer with a TransactionChecker (it records what it is asked and answers
 * ROLLBACK) sends three half messages to a {@code message.type=TRANSACTION} topic, each in its
 * own transaction: {@code commit-1} committed, {@code rollback-1} rolled back, {@code commit-2}
 * committed; a SimpleConsumer then receives until both committed ones arrived ({@link Receive}).
 * Prints the send receipts' ids, every delivery and the check-backs.
 *
 * <p>Arguments: {@code endpoint topic group}.
 */
public final class TransactionScenario {
    private TransactionScenario() {}

    public static void main(String[] args) throws Exception {
        Out.Run run = Out.run(args);
        List<String> checks = Collections.synchronizedList(new ArrayList<>());
        List<String> sent = new ArrayList<>();
        try (Producer producer = run.provider().newProducerBuilder()
            .setClientConfiguration(Out.config(run.endpoint()))
            .setTopics(run.topic())
            .setTransactionChecker(view -> {
                checks.add(Out.body(view));
                return TransactionResolution.ROLLBACK;
            })
            .build()) {
            for (String body : new String[] {"commit-1", "rollback-1", "commit-2"}) {
                Transaction transaction = producer.beginTransaction();
                sent.add(producer.send(run.provider().newMessageBuilder()
                    .setTopic(run.topic())
                    .setBody(body.getBytes(StandardCharsets.UTF_8))
                    .build(), transaction).getMessageId().toString());
                if (body.startsWith("commit")) {
                    transaction.commit();
                } else {
                    transaction.rollback();
                }
            }
        }
        List<String> received = Receive.receive(run.provider(), run.endpoint(), run.group(), run.topic(), 2);
        Out.finish("{\"sent\":" + Out.strings(sent) + ",\"received\":" + Out.array(received)
            + ",\"checks\":" + Out.strings(new ArrayList<>(checks)) + "}");
    }
}
