// Submits the sign-out form that ends the Signet session (RP-Initiated Logout 1.0 §2, parameters in the body).
// An external script because the console's CSP allows no inline one; the button is the no-script fallback.
document.getElementById('end-session')?.requestSubmit();
