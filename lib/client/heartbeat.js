// Application-level heartbeat. Browsers never see WebSocket ping frames, so
// a half-open connection (laptop lid, network switch) would look open
// forever; the protocol's own ping/pong frames make it visible.

export class Heartbeat {
  /**
   * @param {() => void} sendPing sends one protocol ping
   * @param {() => void} onDead called once when a ping went unanswered for a whole interval
   */
  constructor(sendPing, onDead) {
    this.sendPing = sendPing;
    this.onDead = onDead;
    this.timer = undefined;
    this.awaiting = false;
  }

  /** Pings every `interval` ms; the same rule as the gateway's own sweep. */
  start(interval) {
    this.stop();
    this.timer = setInterval(() => this.tick(), interval);
  }

  tick() {
    if (this.awaiting) {
      this.stop();
      this.onDead();
      return;
    }
    this.awaiting = true;
    this.sendPing();
  }

  pong() {
    this.awaiting = false;
  }

  stop() {
    clearInterval(this.timer);
    this.timer = undefined;
    this.awaiting = false;
  }
}
