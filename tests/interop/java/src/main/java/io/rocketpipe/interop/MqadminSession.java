package io.rocketpipe.interop;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.Permission;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * mqadmin commands run one after another in one JVM (a JVM per command costs ~4 s of start-up):
 * each stdin line is one command's arguments separated by tabs, run by
 * {@code MQAdminStartup.main0(args, null)} as {@code mqadmin} runs it. For each, stdout gets
 * {@code @@mqadmin <exit code> <byte count>} and a newline, then what the command printed
 * (stdout and stderr). The exit code is 0 when main0 returns, the status of a
 * {@code System.exit} it calls (ServerUtil on bad options), or 1 on an uncaught throwable.
 * Output of background threads between commands is dropped.
 */
public final class MqadminSession {
    private MqadminSession() {
    }

    /** A System.exit turned into a throwable that MQAdminStartup's catch (Exception) lets through. */
    private static final class ExitCalled extends Error {
        private static final long serialVersionUID = 1L;
        final int status;

        ExitCalled(int status) {
            super("System.exit(" + status + ")");
            this.status = status;
        }
    }

    /** An output stream whose target can be switched between commands. */
    private static final class Switch extends OutputStream {
        private volatile OutputStream target = OutputStream.nullOutputStream();

        @Override
        public void write(int b) throws IOException {
            target.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            target.write(b, off, len);
        }
    }

    public static void main(String[] args) throws IOException {
        System.setSecurityManager(new SecurityManager() {
            @Override
            public void checkPermission(Permission perm) {
            }

            @Override
            public void checkPermission(Permission perm, Object context) {
            }

            @Override
            public void checkExit(int status) {
                throw new ExitCalled(status);
            }
        });
        OutputStream wire = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out));
        Switch output = new Switch();
        PrintStream printed = new PrintStream(output, true, StandardCharsets.UTF_8);
        System.setOut(printed);
        System.setErr(printed);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] command = line.isEmpty() ? new String[0] : line.split("\t", -1);
            ByteArrayOutputStream captured = new ByteArrayOutputStream();
            output.target = captured;
            int code = 0;
            try {
                MQAdminStartup.main0(command, null);
            } catch (ExitCalled e) {
                code = e.status;
            } catch (Throwable t) {
                t.printStackTrace();
                code = 1;
            }
            printed.flush();
            output.target = OutputStream.nullOutputStream();
            byte[] bytes = captured.toByteArray();
            wire.write(("@@mqadmin " + code + " " + bytes.length + "\n").getBytes(StandardCharsets.US_ASCII));
            wire.write(bytes);
            wire.flush();
        }
    }
}
